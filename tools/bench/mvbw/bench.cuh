// Shared by the mvbw microbenchmarks (mvbw.cu, chain.cu): deterministic random weights and
// the CUDA error check. Included after the engine's common.cuh and mvq1.cu.

__device__ __forceinline__ u32 hash32(unsigned long long i, u32 seed) {
    u32 h = (u32)i * 2654435761u ^ (u32)(i >> 32) * 0x85ebca6bu ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

// Random Q4_K blocks with small normal f16 d and dmin.
__global__ void fill_q4k(u8 *w, unsigned long long n_blocks, u32 seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n_blocks * 36; i += (unsigned long long)gridDim.x * blockDim.x) {
        u32 v = hash32(i, seed);
        if (i % 36 == 0) v = (0x1C00u | (v & 0x3FFu)) | ((0x1800u | ((v >> 16) & 0x3FFu)) << 16);
        ((u32 *)w)[i] = v;
    }
}

// q4k_rows's per-lane constants (lane, super-blocks per row nb, row bytes, quarter k, its
// scale shift and half) and RR zeroed accumulators, for the benchmarks' variants of its loop
// (inside a function with an `n_in` parameter).
#define Q4K_LANE(RR)                                                                           \
    const int lane = threadIdx.x & 31;                                                         \
    const int nb = n_in >> 8;                                                                  \
    const size_t row_bytes = (size_t)nb * 144;                                                 \
    const int k = lane & 3;                                                                    \
    const int sh = 16 * (k & 1);                                                               \
    const bool upper = k >= 2;                                                                 \
    float acc[RR];                                                                             \
    _Pragma("unroll") for (int r = 0; r < RR; r++) acc[r] = 0.0f

#ifndef MVBW_DEVICE_ONLY
#define CK(x)                                                                                   \
    do {                                                                                       \
        cudaError_t e = (x);                                                                   \
        if (e != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#endif
