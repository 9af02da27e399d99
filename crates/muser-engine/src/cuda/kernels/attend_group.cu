// Split-K flash-decode attention with GT query heads of one KV group per block (appended to
// decode.cu at compile time). Block (kvh * n_sub + sub, s) takes query heads
// h0 .. h0 + GT - 1 of KV head kvh (h0 = kvh * G + sub * GT, G = n_head / n_head_kv) and
// split s of the window: each K and V row is loaded and widened from f16 once for GT heads,
// where attend_split loads it once per head (16 times per row in the real model, from L2).
//
// Per head the arithmetic is attend_split's, in the same order (the same dot-product
// expression, online-softmax update, value accumulation and warp merge), so the partials are
// bit-identical to it; the merge kernel is shared. Each lane's chunk probabilities go through
// shared memory (one broadcast read per row and head instead of a shuffle).
template <int HD, int GT>
__device__ __forceinline__ void attend_group_hd(const float *q, const u16 *kc, const u16 *vc,
                                                float *part, int n_head, int n_head_kv,
                                                const int *meta, int cap, float scale) {
    constexpr int D = HD / 32;
    __shared__ __align__(16) float qs[GT][HD];
    __shared__ float ps[4][GT][32];
    __shared__ float wm[4][GT], wsum[4][GT];
    __shared__ float wo[4][HD];
    // K rows staged per warp as in attend_split_hd (head sizes up to 128).
    constexpr bool KS = HD <= 128;
    __shared__ uint4 ks[KS ? 4 : 1][KS ? 32 : 1][HD / 8 + 1];
    const int G = n_head / n_head_kv, n_sub = G / GT;
    const int kvh = blockIdx.x / n_sub, h0 = kvh * G + (blockIdx.x % n_sub) * GT;
    const int s = blockIdx.y, n_split = gridDim.y;
    const int first = meta[0], n = meta[1];
    const int kv_dim = n_head_kv * HD;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < GT * HD; i += blockDim.x) qs[i / HD][i % HD] = q[h0 * HD + i];
    __syncthreads();
    const int per = (n + n_split - 1) / n_split;
    const int j0 = s * per, j1 = min(n, j0 + per);
    float m[GT], sum[GT], o[GT][D];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -3.0e38f;
        sum[g] = 0.0f;
#pragma unroll
        for (int k = 0; k < D; k++) o[g][k] = 0.0f;
    }
    for (int c0 = j0 + 32 * warp; c0 < j1; c0 += 128) {
        const int j = c0 + lane;
        const bool valid = j < j1;
        const int slot = (first + (valid ? j : c0)) % cap;
        float d[GT];
#pragma unroll
        for (int g = 0; g < GT; g++) d[g] = -3.0e38f;
        if (KS) stage_k_rows<HD>(ks[warp], kc, slot, kv_dim, kvh, c0, j1);
        if (valid) {
            const uint4 *kr = (const uint4 *)(kc + (size_t)slot * kv_dim + kvh * HD);
            uint4 kv[HD / 8];
#pragma unroll
            for (int c = 0; c < HD / 8; c++) kv[c] = KS ? ks[KS ? warp : 0][KS ? lane : 0][c] : kr[c];
            float acc[GT];
#pragma unroll
            for (int g = 0; g < GT; g++) acc[g] = 0.0f;
#pragma unroll
            for (int c = 0; c < HD / 8; c++) {
                const float k0 = h2f((u16)(kv[c].x & 0xFFFF)), k1 = h2f((u16)(kv[c].x >> 16));
                const float k2 = h2f((u16)(kv[c].y & 0xFFFF)), k3 = h2f((u16)(kv[c].y >> 16));
                const float k4 = h2f((u16)(kv[c].z & 0xFFFF)), k5 = h2f((u16)(kv[c].z >> 16));
                const float k6 = h2f((u16)(kv[c].w & 0xFFFF)), k7 = h2f((u16)(kv[c].w >> 16));
#pragma unroll
                for (int g = 0; g < GT; g++) {
                    const float4 qa = *(const float4 *)&qs[g][8 * c];
                    const float4 qb = *(const float4 *)&qs[g][8 * c + 4];
                    acc[g] += qa.x * k0 + qa.y * k1 + qa.z * k2 + qa.w * k3 + qb.x * k4 +
                              qb.y * k5 + qb.z * k6 + qb.w * k7;
                }
            }
#pragma unroll
            for (int g = 0; g < GT; g++) d[g] = acc[g] * scale;
        }
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float cm = d[g];
            for (int off = 16; off > 0; off >>= 1)
                cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, off));
            const float nm = fmaxf(m[g], cm);
            const float corr = expf(m[g] - nm);
            const float p = valid ? expf(d[g] - nm) : 0.0f;
            sum[g] = sum[g] * corr + warp_sum(p);
#pragma unroll
            for (int k = 0; k < D; k++) o[g][k] *= corr;
            ps[warp][g][lane] = p;
            m[g] = nm;
        }
        __syncwarp();
        // Rows past the share have p = 0 and read row c0 (always valid memory).
        u32 vv[32][(D + 1) / 2];
        load_v_rows<HD>(vv, vc, slot, kv_dim, kvh);
#pragma unroll
        for (int jj = 0; jj < 32; jj++) {
#pragma unroll
            for (int k = 0; k < D; k++) {
                const u32 w2 = vv[jj][k / 2];
                const float vk = h2f((u16)(k % 2 ? w2 >> 16 : w2 & 0xFFFF));
#pragma unroll
                for (int g = 0; g < GT; g++) o[g][k] += ps[warp][g][jj] * vk;
            }
        }
        __syncwarp();
    }
    // The four warps' partials merged through shared memory, one head at a time.
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (lane == 0) {
            wm[warp][g] = m[g];
            wsum[warp][g] = sum[g];
        }
#pragma unroll
        for (int k = 0; k < D; k++) wo[warp][lane * D + k] = o[g][k];
        __syncthreads();
        float *out = part + ((size_t)(h0 + g) * n_split + s) * (HD + 2);
        const float bm = fmaxf(fmaxf(wm[0][g], wm[1][g]), fmaxf(wm[2][g], wm[3][g]));
        for (int i = threadIdx.x; i < HD; i += blockDim.x) {
            float acc = 0.0f;
            for (int w = 0; w < 4; w++) acc += wo[w][i] * expf(wm[w][g] - bm);
            out[2 + i] = acc;
        }
        if (threadIdx.x == 0) {
            float bs = 0.0f;
            for (int w = 0; w < 4; w++) bs += wsum[w][g] * expf(wm[w][g] - bm);
            out[0] = bm;
            out[1] = bs;
        }
        __syncthreads();
    }
}

// Each size also as `_m`: the split-K merge of the block's GT heads folded in (fold_merge,
// decode.cu; DecodeTuning::fold_merge).
#define ATTEND_GROUP(HD, GT)                                                                   \
    extern "C" __global__ void attend_group_##HD##_##GT(                                       \
        const float *q, const u16 *kc, const u16 *vc, float *part, int n_head, int n_head_kv,   \
        const int *meta, int cap, float scale) {                                               \
        attend_group_hd<HD, GT>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale);          \
    }                                                                                          \
    extern "C" __global__ void attend_group_##HD##_##GT##_m(                                   \
        const float *q, const u16 *kc, const u16 *vc, float *part, int n_head, int n_head_kv,   \
        const int *meta, int cap, float scale, float *out, const float *g, signed char *qa,    \
        float *da, float *sa, unsigned *cnt) {                                                 \
        attend_group_hd<HD, GT>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale);          \
        const int G = n_head / n_head_kv, n_sub = G / GT;                                      \
        const int h0 = (blockIdx.x / n_sub) * G + (blockIdx.x % n_sub) * GT;                   \
        fold_merge<false>(part, out, g, qa, da, sa, HD, h0, GT, cnt);                          \
    }
ATTEND_GROUP(64, 4)
ATTEND_GROUP(64, 8)
ATTEND_GROUP(128, 4)
ATTEND_GROUP(128, 8)
ATTEND_GROUP(256, 4)
