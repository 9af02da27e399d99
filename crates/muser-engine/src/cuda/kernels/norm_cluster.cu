// norm_tail_q8 (the norm between two matvecs: post-norm residual, next norm, int8 row) spread
// over a thread-block cluster of NC_BLOCKS blocks (sm_90, appended to decode.cu at compile
// time): block b takes elements [b n / NC_BLOCKS, (b + 1) n / NC_BLOCKS), 8 consecutive values
// per thread as norm_tail_vec8, and the two row sums go through distributed shared memory
// (each block's sum pushed into every block's shared memory and added there in rank order, so
// all blocks get the same bits). One block of 1,024 threads moves the whole row (4 × 26 KB
// in, 2 × 26 KB out for n = 6656) through one SM; here each SM moves an eighth. Same operations per element
// as norm_tail_vec8; only the order of the row sums differs.
// norm_tail_q8_cl1 (the post-norm tails, mode 2) takes both row sums from one exchange
// (norm_tail_cl<true> below): 7.4 → 7.0 µs per call (event-timed), 182.2-183.4 → 184.7-184.8
// tok/s, 159.3 → 160.8 at depth 32768 (bench/runs/2026-11-30-h200-g r2).
// The exchanges by pushes (common.cuh's push_*) instead of each block's slot read by the others
// after a release/acquire cluster barrier: 6.80 → 6.48 µs per post-norm tail (event-timed),
// with the folded QK-norm's the same way 208.0-209.8 → 210.4-211.0 tok/s at depth 0, the same
// bits (bench/runs/2026-12-02-h200-a a3).
#define NC_BLOCKS 8

// Thread 0's b pushed into recv[rank] of every block of the cluster of NC (common.cuh's
// push_*; `first`: the launch's first exchange, which waits for the cluster's push_init), then
// the wait until every block's has landed in this block's recv.
template <int NC = NC_BLOCKS>
__device__ __forceinline__ void push_all(float4 b, float4 *recv, unsigned long long *bar,
                                         bool first) {
    if (first) push_ready();
    if (threadIdx.x == 0) {
        const u32 me = cluster_rank();
#pragma unroll
        for (u32 r = 0; r < NC; r++) push_f4(&recv[me], r, b, bar);
    }
    push_wait(bar);
}

// The cluster-wide sum of v (every thread of every block gets it, the same bits in every
// block): block_sum's, pushed (push_all), added in rank order.
__device__ __forceinline__ float cluster_sum(float v, float *sh, float4 *recv,
                                             unsigned long long *bar, bool first) {
    push_all(make_float4(block_sum(v, sh), 0.f, 0.f, 0.f), recv, bar, first);
    float t = 0.0f;
#pragma unroll
    for (u32 r = 0; r < NC_BLOCKS; r++) t += recv[r].x;
    return t;
}

// The block's four sums (v summed over its threads), valid in thread 0: the warps' butterfly
// sums, then thread 0 adding the warps' in order.
__device__ __forceinline__ float4 block_sum4(float4 v, float4 *sh4) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
        v.z += __shfl_xor_sync(0xffffffffu, v.z, o);
        v.w += __shfl_xor_sync(0xffffffffu, v.w, o);
    }
    if ((threadIdx.x & 31) == 0) sh4[threadIdx.x >> 5] = v;
    __syncthreads();
    float4 b = sh4[0];
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)((blockDim.x + 31) >> 5); w++) {
            b.x += sh4[w].x;
            b.y += sh4[w].y;
            b.z += sh4[w].z;
            b.w += sh4[w].w;
        }
    }
    return b;
}

// Four cluster-wide sums at once over a cluster of NC blocks, as cluster_sum: block_sum4's,
// pushed, added in rank order.
template <int NC = NC_BLOCKS>
__device__ __forceinline__ float4 cluster_sum4(float4 v, float4 *sh4, float4 *recv,
                                               unsigned long long *bar, bool first) {
    push_all<NC>(block_sum4(v, sh4), recv, bar, first);
    float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (u32 r = 0; r < NC; r++) {
        const float4 c = recv[r];
        t.x += c.x;
        t.y += c.y;
        t.z += c.z;
        t.w += c.w;
    }
    return t;
}

// ONE (mode 2 only): both row sums from one exchange. Σ o², Σ x², Σ x·op, Σ op² (op = o·wp)
// are summed together, and Σ x'² of x' = x + s·op is taken as Σx² + s·(2 Σ x·op + s Σ op²):
// one block reduction and one cluster barrier fewer, a different rounding of the second sum
// (held to the oracle's bar).
template <bool ONE>
__device__ __forceinline__ void norm_tail_cl(float *x, const float *o, const float *wp,
                                             float eps_post, const float *wn, float eps,
                                             float *h, signed char *qa, float *da, float *sa,
                                             int n, int mode) {
    __shared__ float sh[32];
    __shared__ float4 sh4[32];
    // Exchange k (at most two per launch) lands in recv[k], counted on bar[k].
    __shared__ float4 recv[2][NC_BLOCKS];
    __shared__ unsigned long long bar[2];
    push_init(bar, 2, 16 * NC_BLOCKS);
    const int per = n / NC_BLOCKS;
    const int t = threadIdx.x, i0 = blockIdx.x * per + 8 * t;
    const bool on = 8 * t < per;
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 c = on ? *(const float4 *)(wn + i0) : z, d = on ? *(const float4 *)(wn + i0 + 4) : z;
    float4 pc = z, pd = z;
    if (mode == 2 && on) {
        pc = *(const float4 *)(wp + i0);
        pd = *(const float4 *)(wp + i0 + 4);
    }
    float xv[8];
    {
        const float4 a = on ? *(const float4 *)(x + i0) : z, b = on ? *(const float4 *)(x + i0 + 4) : z;
        xv[0] = a.x; xv[1] = a.y; xv[2] = a.z; xv[3] = a.w; xv[4] = b.x; xv[5] = b.y; xv[6] = b.z; xv[7] = b.w;
    }
    const float wv[8] = {c.x, c.y, c.z, c.w, d.x, d.y, d.z, d.w};
    float ss2 = -1.0f;
    if (mode == 1) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
        const float scale = rsqrtf(cluster_sum(ss, sh, recv[0], &bar[0], true) / n + eps);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] = xv[k] * scale * 1.0f;
    } else if (ONE && mode == 2) {
        const float4 a = on ? *(const float4 *)(o + i0) : z, b = on ? *(const float4 *)(o + i0 + 4) : z;
        const float ov[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float pv[8] = {pc.x, pc.y, pc.z, pc.w, pd.x, pd.y, pd.z, pd.w};
        float4 p = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float op = __fmul_rn(ov[k], pv[k]);
            p.x = __fmaf_rn(ov[k], ov[k], p.x);
            p.y = __fmaf_rn(xv[k], xv[k], p.y);
            p.z = __fmaf_rn(xv[k], op, p.z);
            p.w = __fmaf_rn(op, op, p.w);
        }
        const float4 t = cluster_sum4(p, sh4, recv[0], &bar[0], true);
        const float scale = rsqrtf(t.x / n + eps_post);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] += ov[k] * scale * pv[k];
        // Clamped at 0 against rounding, but a NaN or Inf from the sums passes through (as
        // in the two-exchange path); fmaxf would turn NaN into 0.
        const float v = t.y + scale * (2.0f * t.z + scale * t.w);
        ss2 = v < 0.0f ? 0.0f : v;
    } else if (mode == 2) {
        const float4 a = on ? *(const float4 *)(o + i0) : z, b = on ? *(const float4 *)(o + i0 + 4) : z;
        const float ov[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float pv[8] = {pc.x, pc.y, pc.z, pc.w, pd.x, pd.y, pd.z, pd.w};
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += ov[k] * ov[k];
        const float scale = rsqrtf(cluster_sum(ss, sh, recv[0], &bar[0], true) / n + eps_post);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] += ov[k] * scale * pv[k];
    }
    if (mode != 0 && on) {
        *(float4 *)(x + i0) = make_float4(xv[0], xv[1], xv[2], xv[3]);
        *(float4 *)(x + i0 + 4) = make_float4(xv[4], xv[5], xv[6], xv[7]);
    }
    if (ss2 < 0.0f) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
        ss2 = cluster_sum(ss, sh, recv[1], &bar[1], mode == 0);
    }
    push_done();
    const float scale = rsqrtf(ss2 / n + eps);
    float hv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) hv[k] = xv[k] * scale * wv[k];
    store_h_q8(hv, h, qa, da, sa, i0, on);
    // No block leaves before the whole cluster has received its sums.
    push_leave();
}

extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8_cl(
    float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,
    float *h, signed char *qa, float *da, float *sa, int n, int mode) {
    norm_tail_cl<false>(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode);
}

extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8_cl1(
    float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,
    float *h, signed char *qa, float *da, float *sa, int n, int mode) {
    norm_tail_cl<true>(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode);
}
