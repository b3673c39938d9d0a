// KV gather: copy every fragment of a descriptor list in one launch (what LMCache and SGLang
// ship). Source may be pinned host memory addressed through its device pointer. A block per
// descriptor row (grid-stride over rows); 16-byte vectors when both ends and the length allow.

extern "C" __global__ void kv_gather(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                                     const unsigned long long* __restrict__ src_off,
                                     const unsigned long long* __restrict__ dst_off,
                                     const unsigned long long* __restrict__ length, unsigned long long rows) {
    for (unsigned long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const unsigned char* s = src + src_off[r];
        unsigned char* d = dst + dst_off[r];
        const unsigned long long n = length[r];
        if ((((unsigned long long)s | (unsigned long long)d | n) & 15ull) == 0) {
            const uint4* s4 = reinterpret_cast<const uint4*>(s);
            uint4* d4 = reinterpret_cast<uint4*>(d);
            for (unsigned long long i = threadIdx.x; i < n / 16; i += blockDim.x) d4[i] = s4[i];
        } else {
            for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
        }
    }
}
