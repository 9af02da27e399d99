// Tensor-core causal attention of a batched prefill chunk (appended after attend_mma.cu, whose
// mma_chunk step it uses; sm_80+: mma.sync, ldmatrix, cp.async).
//
// Block (bx, y): chunk tokens t0 = 4 bx .. t0 + 3, one warp each, and up to 16 query heads of
// KV group kvh = y / n_sub (sub-block y % n_sub) as the 16 M rows of the products (heads past
// the group are zero rows), as in the decode kernel attend_mma. Keys are numbered from the
// block's first window start lo_b = max(org_log, p0 + t0 - window + 1): key j is position
// lo_b + j, a ring row for j < n_ring = p0 - lo_b, else chunk row j - n_ring (pf_key_row). The
// block walks keys 0 .. n_ring + t_last in chunks of 32, each chunk's K and V rows staged once
// in shared memory (cp.async, two stages) for its four tokens; warp w keeps the keys of its own
// window [lo_w - lo_b, n_ring + t0 + w] and skips chunks outside it. Per chunk as attend_mma:
// S = Q · Kᵀ, an online softmax per head row, O += P · V, with Q and P split into f16 hi + lo
// parts (near-f32 products). The sigmoid gate and the f16 output as pf_attend_out. The
// summation order differs from pf_attend_g's: held to the oracle's bar (the prefill checks).
//
// Why: pf_attend_g (CUDA cores, one block per token) reads every key once per token and does
// the products in scalar f32; it set the fall-off of long prompts (pp8192 3,487 tok/s against
// pp512 5,186, bench/runs/2026-11-30-h200-k r10).
template <int HD>
__device__ __forceinline__ void pf_attend_mma_t(const float *q, const u16 *kring,
                                                const u16 *vring, const u16 *kc, const u16 *vc,
                                                const float *gate, u16 *out, int n_head,
                                                int n_head_kv, int p0, int org_log,
                                                int org_phys, int cap, int window, float scale,
                                                int m) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int CH = 32, PAD = HD + 8, NT = CH / 8, KST = HD / 16, DT = HD / 8;
    constexpr int PIECES = CH * HD / 8;
    __shared__ __align__(16) u16 stage[2][2][CH * PAD];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int G = n_head / n_head_kv, GB = G < 16 ? G : 16, n_sub = G / GB;
    const int kvh = blockIdx.y / n_sub, h0 = kvh * G + (blockIdx.y % n_sub) * GB;
    const int kv_dim = n_head_kv * HD;
    const int t0 = 4 * blockIdx.x, t = t0 + warp;
    const int t_last = min(t0 + 3, m - 1);
    const bool live = t < m;
    const int lo_b = max(org_log, p0 + t0 - window + 1);
    const int n_ring = max(p0 - lo_b, 0);
    const int n_keys = n_ring + t_last + 1;
    const int j_lo = max(org_log, p0 + t - window + 1) - lo_b;
    const int j_hi = n_ring + t;
    const int tc = live ? t : t_last;
    // Q as A fragments, hi and lo (token tc's rows).
    u32 qh[KST][4], ql[KST][4];
    q_frags<HD, true>(q + (size_t)tc * n_head * HD, h0, GB, qh, ql);
    // Keys c0 .. c0 + CH - 1 into stage st (one commit group; keys past the end read as 0).
    auto load = [&](int c0, int st) {
        u16 *ks = stage[st][0], *vs = stage[st][1];
        for (int e = threadIdx.x; e < PIECES; e += blockDim.x) {
            const int r = e / (HD / 8), c = e % (HD / 8), j = c0 + r;
            const bool ok = j < n_keys;
            bool ring;
            const size_t row = pf_key_row(ok ? j : 0, n_ring, lo_b, org_log, org_phys, cap, &ring);
            const size_t off = row * kv_dim + kvh * HD + c * 8;
            const u32 n_bytes = ok ? 16 : 0;
            unsigned long long dk, dv;
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(dk) : "l"((unsigned long long)(ks + r * PAD + c * 8)));
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(dv) : "l"((unsigned long long)(vs + r * PAD + c * 8)));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((u32)dk),
                         "l"((ring ? kring : kc) + off), "r"(n_bytes)
                         : "memory");
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((u32)dv),
                         "l"((ring ? vring : vc) + off), "r"(n_bytes)
                         : "memory");
        }
    };
    float m0 = -3.0e38f, m1 = -3.0e38f, sum0 = 0.0f, sum1 = 0.0f;
    float o[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    const int n_chunks = (n_keys + CH - 1) / CH;
    load(0, 0);
    asm volatile("cp.async.commit_group;" ::: "memory");
    for (int i = 0; i < n_chunks; i++) {
        if (i + 1 < n_chunks) load((i + 1) * CH, (i + 1) & 1);
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        const int c0 = i * CH;
        if (live && c0 + CH > j_lo && c0 <= j_hi) {
            const u16 *ks = stage[i & 1][0], *vs = stage[i & 1][1];
            mma_chunk<HD, CH, true>(ks, vs, qh, ql, o, m0, m1, sum0, sum1, scale, [&](int col) {
                const int j = c0 + col;
                return j >= j_lo && j <= j_hi;
            });
        }
        // Every warp done with this stage before the next iteration's load overwrites it.
        __syncthreads();
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (!live) return;
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);
    const float inv0 = 1.0f / sum0, inv1 = 1.0f / sum1;
#pragma unroll
    for (int d = 0; d < DT; d++) {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = g + 8 * r;
            if (row >= GB) continue;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const size_t i = ((size_t)t * n_head + h0 + row) * HD + 8 * d + 2 * tq + e;
                float a = o[d][2 * r + e] * (r ? inv1 : inv0);
                a *= 1.0f / (1.0f + expf(-gate[i]));
                out[i] = f2h(a);
            }
        }
    }
#endif
}

#define PF_ATTEND_MMA(HD)                                                                      \
    extern "C" __global__ void __launch_bounds__(128) pf_attend_mma_##HD(                      \
        const float *q, const u16 *kring, const u16 *vring, const u16 *kc, const u16 *vc,      \
        const float *gate, u16 *out, int n_head, int n_head_kv, int p0, int org_log,            \
        int org_phys, int cap, int window, float scale, int m) {                               \
        pf_attend_mma_t<HD>(q, kring, vring, kc, vc, gate, out, n_head, n_head_kv, p0,          \
                            org_log, org_phys, cap, window, scale, m);                         \
    }
PF_ATTEND_MMA(64)
PF_ATTEND_MMA(128)
