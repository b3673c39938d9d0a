// HBM bandwidth kernels: 16-byte vector accesses in grid-stride loops, four in flight per
// thread, so that the memory system, not instruction issue, is the limit.
// Compiled at run time by cupy (NVRTC) and compile-checked with nvcc in CI.

#define UNROLL 4

// hbm_read's checksum: vector i (16 bytes, words x y z w) contributes
//   (2i + 1) * ((x + K1 y + K2 z + K3 w) | 1)        (32 x 32 -> 64-bit product, summed mod 2^64)
// Both factors are odd, so every term is odd and never 0 mod 2^64: a vector skipped or read twice
// always changes the total, and one read from the wrong place changes its term. The timed launch
// itself produces it (each block stores its sum in partials[blockIdx.x]); the host checks the
// partials of the last timed launch against the value computed from the pattern
// (kvbench/benches/hbm.py: read_checksum).
#define K1 0x9E3779B1u
#define K2 0x85EBCA77u
#define K3 0xC2B2AE3Du

__device__ __forceinline__ unsigned long long read_term(uint4 v, unsigned long long i) {
    const unsigned int g = (v.x + v.y * K1 + v.z * K2 + v.w * K3) | 1u;
    return (unsigned long long)(unsigned int)(2ull * i + 1ull) * g;
}

extern "C" __global__ void hbm_read(const uint4* __restrict__ src, unsigned long long n,
                                    unsigned long long* __restrict__ partials) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc += read_term(v[k], i + k * stride);
    }
    for (; i < n; i += stride) acc += read_term(src[i], i);
    // one sum per block: warps by shuffle, then the block's warps through shared memory
    __shared__ unsigned long long warp_sums[32];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (blockDim.x + 31u) / 32u ? warp_sums[lane] : 0ull;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (lane == 0) partials[blockIdx.x] = acc;
    }
}

extern "C" __global__ void hbm_write(uint4* __restrict__ dst, unsigned long long n, unsigned int seed) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int w = (unsigned int)i * 4u + seed;
        dst[i] = make_uint4(w, w + 1u, w + 2u, w + 3u);
    }
}

extern "C" __global__ void vector_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) dst[i + k * stride] = v[k];
    }
    for (; i < n; i += stride) dst[i] = src[i];
}
