// Shared by the mvbw microbenchmarks: deterministic random weights, the tiled Q4_K layout
// (mvbw.cu, ilv.cu), the CUDA error check and timing. Included after the engine's common.cuh
// and mvq1.cu.

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

// A loop trip's weights of rows row0 .. row0 + RR at super-block b into hd/q0/q1[r] (the
// loads of q4k_rows: rows past n_out read the last row), and the RR rows' warp sums written
// by lane 0 to y[0 .. RR) where below n_out: the pieces every variant of the loop shares.
#define Q4K_TRIP(RR, w, row0, n_out, row_bytes, b, k, hd, q0, q1)                              \
    _Pragma("unroll") for (int r_ = 0; r_ < (RR); r_++) {                                      \
        const u8 *blk_ = (w) + (size_t)min((row0) + r_, (n_out) - 1) * (row_bytes) +           \
                         (size_t)(b) * 144;                                                    \
        Q4K_LOAD(blk_, k, hd[r_], q0[r_], q1[r_]);                                             \
    }
#define Q4K_STORE(RR, acc, y, row0, n_out)                                                     \
    _Pragma("unroll") for (int r_ = 0; r_ < (RR); r_++) {                                      \
        const float v_ = warp_sum(acc[r_]);                                                    \
        if ((threadIdx.x & 31) == 0 && (row0) + r_ < (n_out)) (y)[r_] = v_;                    \
    }

// A 16-byte weight load of the tiled kernels: evict-first in L2 (EF) or plain.
template <bool EF>
__device__ __forceinline__ uint4 ld_tile(const u8 *p) {
    return EF ? ld_w16(p) : *(const uint4 *)p;
}

// File layout → tiled layout (see q4k_rows_tiled). One thread per (row, block).
__global__ void q4k_tile(const u8 *src, u8 *dst, int n_out, int nb) {
    const long long n = (long long)n_out * nb;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int row = (int)(i / nb), b = (int)(i % nb);
        const int g = row >> 2, r = row & 3, t = b >> 3, s = b & 7;
        const int m = min(8, nb - 8 * t);
        const u8 *blk = src + i * 144;
        u8 *part = dst + (size_t)g * 4 * nb * 144 + (size_t)t * 4608 + (size_t)r * m * 144;
        *(uint4 *)(part + 16 * s) = *(const uint4 *)blk;
        for (int k = 0; k < 4; k++) {
            const int L = 4 * s + k;
            *(uint4 *)(part + 16 * m + 16 * L) = *(const uint4 *)(blk + 16 + 32 * k);
            *(uint4 *)(part + 80 * m + 16 * L) = *(const uint4 *)(blk + 32 + 32 * k);
        }
    }
}

// q4k_rows over the tiled layout: rows 4g .. 4g + 3 (row0 = 4g), loop trip t (super-blocks
// 8t .. 8t + 7, m of them) is one contiguous run of 4 · m · 144 bytes, row r's part at
// r · m · 144: m headers of 16 bytes, then lane L's first and second 16 quant bytes at
// 16m + 16L and 80m + 16L. The arithmetic is q4k_rows's, in its order.
// EF: the weight loads evict-first in L2 (the engine's ld_w16) instead of plain loads.
template <bool EF = false>
__device__ __forceinline__ void q4k_rows_tiled(const u8 *w, const signed char *qa, const float *da,
                                               const float *sa, float *y, int n_in, int n_out,
                                               int row0) {
    constexpr int RR = 4;
    const int lane = threadIdx.x & 31;
    const int nb = n_in >> 8;
    const int k = lane & 3, s = lane >> 2;
    const int sh = 16 * (k & 1);
    const bool upper = k >= 2;
    const u8 *grp = w + (size_t)(row0 >> 2) * 4 * nb * 144;
    float acc[RR];
#pragma unroll
    for (int r = 0; r < RR; r++) acc[r] = 0.0f;
    for (int b = s; b < nb; b += 8) {
        const int t = b >> 3, m = min(8, nb - 8 * t);
        const u8 *tile = grp + (size_t)t * 4608;
        uint4 hd[RR], q0[RR], q1[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const u8 *part = tile + r * m * 144;
            hd[r] = ld_tile<EF>(part + 16 * s);
            q0[r] = ld_tile<EF>(part + 16 * m + 16 * lane);
            q1[r] = ld_tile<EF>(part + 80 * m + 16 * lane);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++) {
            acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
        }
    }
    Q4K_STORE(RR, acc, y, row0, n_out);
}

// Plain grid-stride read of n16 16-byte words, UNR loads in flight per thread (EF: evict-first
// in L2, as the engine's weight loads): the read ceiling the kernels are compared against.
template <int UNR, bool EF = false>
__global__ void rd_stream(const uint4 *p, size_t n16, u32 *sink) {
    u32 x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + (UNR - 1) * stride < n16; i += UNR * stride) {
        uint4 v[UNR];
#pragma unroll
        for (int u = 0; u < UNR; u++) v[u] = ld_tile<EF>((const u8 *)(p + i + u * stride));
#pragma unroll
        for (int u = 0; u < UNR; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) x ^= p[i].x;
    if (x == 0x12345678u) sink[0] = x;
}

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

// Random int8 activations with their scales d and d·Σq (plausible magnitudes).
__global__ void fill_i8(signed char *a, float *d, float *s, int n, u32 seed) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        a[i] = (signed char)(hash32(i, seed) & 0xFF);
        if (i % 32 == 0) {
            d[i / 32] = 0.01f + (hash32(i, seed + 1) & 0xFF) * 1e-4f;
            s[i / 32] = (float)((int)(hash32(i, seed + 2) & 0xFFF) - 2048) * 1e-3f;
        }
    }
}

// Small normal f16 values (the split layout's d array).
__global__ void fill_d16(u16 *d, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        d[i] = (u16)(0x1C00u | (hash32(i, 7) & 0x3FFu));
}

// Small normal f16 values as every block's d of an n_out × 256 nb Q6_K matrix in the split
// layout (common.cuh).
__global__ void fill_q6s_d(u8 *w, int n_out, int nb) {
    const unsigned long long n = (unsigned long long)n_out * nb;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const int row = (int)(i / nb), b = (int)(i % nb);
        int m;
        u8 *part = (u8 *)q6s_part(w, nb, row, b, &m);
        *(u16 *)(part + 208 * m + 2 * (b & 7)) = (u16)(0x1C00u | (hash32(i, 7) & 0x3FFu));
    }
}

// The sum of v over a block of up to 1,024 threads (every thread gets it).
__device__ float block_sum1024(float v) {
    __shared__ float s[32];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
    __syncthreads();
    v = warp_sum(s[threadIdx.x & 31]);
    __syncthreads();
    return v;
}

#ifndef MVBW_DEVICE_ONLY
// A launch configuration in thread-block clusters of `cl` blocks.
struct ClusterCfg {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at;
    ClusterCfg(int grid, int block, int cl, cudaStream_t st = 0) {
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(block);
        cfg.stream = st;
        at.id = cudaLaunchAttributeClusterDimension;
        at.val.clusterDim.x = cl;
        at.val.clusterDim.y = 1;
        at.val.clusterDim.z = 1;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
    }
};

// `kern` launched on `st` in clusters of `cl` blocks.
template <typename K, typename... A>
static void launch_cl(cudaStream_t st, K kern, int grid, int block, int cl, A... args) {
    ClusterCfg c(grid, block, cl, st);
    CK(cudaLaunchKernelEx(&c.cfg, kern, args...));
}

// How many clusters of `cl` blocks of `kern` the device runs at once.
template <typename K>
static int max_clusters(K kern, int grid, int block, int cl) {
    ClusterCfg c(grid, block, cl);
    int n = 0;
    CK(cudaOccupancyMaxActiveClusters(&n, kern, &c.cfg));
    return n;
}

// An n_out × 256 nb Q6_K matrix of random blocks in the split layout (common.cuh), allocated
// (q6s_bytes) and filled: random words (fill_q4k's) and small normal d values.
static u8 *q6s_random(int n_out, int nb, u32 seed) {
    u8 *w;
    const size_t bytes = q6s_bytes(n_out, nb);
    CK(cudaMalloc(&w, bytes));
    fill_q4k<<<1024, 256>>>(w, bytes / 144, seed);
    fill_q6s_d<<<1024, 256>>>(w, n_out, nb);
    return w;
}

// Small normal f16 values as every block's d of n_blocks Q6_K blocks in the file layout.
__global__ void fill_q6k_file_d(u8 *w, unsigned long long n_blocks) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n_blocks; i += (unsigned long long)gridDim.x * blockDim.x)
        *(u16 *)(w + i * 210 + 208) = (u16)(0x1C00u | (hash32(i, 7) & 0x3FFu));
}

// An n_out × 256 nb Q6_K matrix of random blocks in the file layout (fill_q4k's words, small
// normal d values), rewritten by the engine's q6k_split into the split layout in each of
// `n_units` unit counts `units[i]` (out[i], q6s_bytes_u bytes); the file copy is freed.
static void q6s_random_units(int n_out, int nb, u32 seed, const int *units, u8 **out,
                             int n_units) {
    const unsigned long long nbl = (unsigned long long)n_out * nb;
    u8 *f;
    CK(cudaMalloc(&f, nbl * 210 + 16));
    fill_q4k<<<1024, 256>>>(f, (nbl * 210) / 144, seed);
    fill_q6k_file_d<<<1024, 256>>>(f, nbl);
    for (int i = 0; i < n_units; i++) {
        const size_t bytes = q6s_bytes_u(n_out, nb, units[i]);
        CK(cudaMalloc(&out[i], bytes));
        CK(cudaMemset(out[i], 0, bytes));
        q6k_split<<<1024, 256>>>(f, out[i], n_out, nb, units[i]);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(f));
}

// An int8 activation row of n values with its scales, allocated and filled (fill_i8, seed 5).
static void act_i8(signed char **qa, float **da, float **sa, int n) {
    CK(cudaMalloc(qa, n));
    CK(cudaMalloc(da, n / 32 * 4));
    CK(cudaMalloc(sa, n / 32 * 4));
    fill_i8<<<64, 256>>>(*qa, *da, *sa, n, 5);
}

// Median of 7 timings (CUDA events on stream st) of `reps` calls launch(0 .. reps), in ms per call.
template <typename F>
static double median_ms(cudaStream_t st, int reps, F launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> v;
    for (int rep = 0; rep < 7; rep++) {
        CK(cudaEventRecord(a, st));
        for (int i = 0; i < reps; i++) launch(i);
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        v.push_back(ms / reps);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// median_ms of `reps` launches on the default stream after 4 warm-up launches, in µs per launch.
template <typename F>
static double time_us(F launch, int reps) {
    for (int w = 0; w < 4; w++) launch(w);
    CK(cudaDeviceSynchronize());
    const double ms = median_ms(0, reps, launch);
    CK(cudaGetLastError());
    return ms * 1000.0;
}
#endif
