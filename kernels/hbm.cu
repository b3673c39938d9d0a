// HBM bandwidth kernels: 16-byte vector accesses in grid-stride loops, four in flight per
// thread, so that the memory system, not instruction issue, is the limit.
// Compiled at run time by cupy (NVRTC) and compile-checked with nvcc in CI.

#define UNROLL 4

extern "C" __global__ void hbm_read(const uint4* __restrict__ src, unsigned long long n, unsigned int* sums,
                                    int publish) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) {
        uint4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    // `publish` is 1 only for the integrity check; timed launches pass 0, and the second
    // condition can never hold for them, yet the compiler must keep every load.
    if (publish || acc == 0x9e3779b9u + (unsigned int)n) atomicXor(sums, acc);
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
