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
