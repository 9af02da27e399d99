// Tensor-core split-K flash-decode attention (appended to decode.cu at compile time; sm_80+:
// mma.sync m16n8k16 f16 → f32, ldmatrix, cp.async). Block (kvh * n_sub + sub, s) takes up to
// 16 query heads of one KV group as the M rows of the products (heads past the group are zero
// rows) and split s of the window; it writes attend_split's partials (max, sum,
// unnormalised output[HD] per head and split), so the merge kernel is shared.
//
// Layout: each of the 4 warps walks its own CH-row chunks of the split (chunk c0 = j0 + CH *
// warp, then every 4 CH rows), K and V rows of a chunk copied by cp.async into a per-warp ring
// of NS stages in shared memory (rows of HD + 8 halves, so that ldmatrix's 8 rows fall in
// distinct banks; rows past the share zero-filled), NS - 1 chunks in flight ahead of the one
// being computed. Ring slot of row j: (first + j) % cap.
//   S[16 × CH] = Q · K^T: Q as A fragments in registers, K rows straight from shared memory
//     as B fragments (ldmatrix: a row-major K row is a column of K^T);
//   online softmax per head row (a quad of lanes holds one head's columns);
//   O[16 × HD] += P · V: P's accumulator fragments are reused as A fragments, V through
//     ldmatrix.trans.
// Q and P are split into f16 hi + lo parts (x = hi + lo to ~2^-22), each product run twice, so
// the result is near f32 precision (the f16 K/V are exact in f16). The summation order
// differs from attend_split's, so this kernel is held to the oracle's bar (NMSE against an f64
// reference in the CUDA test, and the session's KL), not bit-identity.
//
// Why: attend_group_128_4 (CUDA cores, f32) read the 33.5 MB K+V plane of a full layer at
// depth 32768 at ~0.75 TB/s (44.5 µs event-timed, h200-e): with 16 heads per KV head the
// f32 FMA work per byte (8 FMA/B plus the f16 widening) is at the CUDA cores' limit, so the
// products move to the tensor cores.
//
// Measured on the H200 (30B synthetic, bench/runs/2026-11-30-h200-i r2, event-timed means over
// the 52 layers at 16 × 4, every layer): 12.98 µs per layer at depth 4096 (per-head + grouped
// kernels: 15.04), 15.44 at 32768 (13 × 45.6 µs grouped + 39 × 12.6 µs per-head before), 27.1
// at 131072 (148 µs grouped on the full layers before). Decode (the session's default: 16 × 2,
// caches of at least 2,048 rows, 512 rows per split on long caches): 171.2-171.4 → 176.5-176.6
// tok/s at depth 4096, 159.3-159.7 → 171.3 at 32768, 122.6 → 154.2 at 131072. On 128-row
// caches (depth 0) it is slower (181 vs 185-186 tok/s: 2 blocks per layer), so it is not used
// there. 16 × 4 and 32 × 2 measured 1-7 % slower than 16 × 2 at depth.
// Round r (bench/runs/2026-12-01-h200-r): Q and P in f16 only (the `_h` variants, the default:
// +0.4-0.5 % at depths 4096 and 32768, r4), and per block the first chunks' copies issued
// before Q's loads and the epilogue's warp weights computed once per head row (the same bits:
// +1.2-1.3 % at depths 4096 and 32768, this kernel 0.53 → 0.47 ms per token event-timed at
// depth 4096, r5).
// d += a · b (m16n8k16, f16 inputs, f32 accumulators; A row-major, B column-major).
__device__ __forceinline__ void mma16816(float *d, const u32 *a, u32 b0, u32 b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// (x0, x1) as packed f16 hi and lo parts: x = hi + lo to ~2^-22 relative.
__device__ __forceinline__ void split_pair(float x0, float x1, u32 &hi, u32 &lo) {
    const u16 a = f2h(x0), b = f2h(x1);
    hi = (u32)a | ((u32)b << 16);
    lo = (u32)f2h(x0 - h2f(a)) | ((u32)f2h(x1 - h2f(b)) << 16);
}

// One chunk of CH staged key rows for a warp of the tensor-core attention (attend_mma and
// pf_attend_mma): S = Q · Kᵀ over the K rows `ks`, the online softmax of its two head rows
// (c0/c1 of a tile: row g, c2/c3: row g + 8; key column 8 nt + 2 (lane & 3) + e) over the
// columns `keep` accepts (the others weigh 0), O += P · V over the V rows `vs` (PAD = HD + 8
// halves per shared row).
// LO: Q and P as f16 hi + lo parts (each product twice, near f32 precision); without, hi only
// (f16 Q and P: scores off by ~2^-12 of |q|·|k|, the probabilities by ~2^-12 relative, below
// the int8 rounding of the attention's output) and the exponentials through ex2.approx
// (__expf).
template <int HD, int CH, bool LO, typename Keep>
__device__ __forceinline__ void mma_chunk(const u16 *ks, const u16 *vs, const u32 (*qh)[4],
                                          const u32 (*ql)[4], float (*o)[4], float &m0,
                                          float &m1, float &sum0, float &sum1, float scale,
                                          Keep keep) {
    constexpr int PAD = HD + 8, NT = CH / 8, KST = HD / 16, DT = HD / 8;
    const int lane = threadIdx.x & 31, t = lane & 3;
    float sc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
        for (int p = 0; p < KST / 2; p++) {
            u32 b0, b1, b2, b3;
            const u16 *src = ks + (8 * nt + (lane & 7)) * PAD + 32 * p + 8 * (lane >> 3);
            unsigned long long a;
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"((unsigned long long)src));
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                         : "r"((u32)a));
            mma16816(sc[nt], qh[2 * p], b0, b1);
            if (LO) mma16816(sc[nt], ql[2 * p], b0, b1);
            mma16816(sc[nt], qh[2 * p + 1], b2, b3);
            if (LO) mma16816(sc[nt], ql[2 * p + 1], b2, b3);
        }
    }
    // Online softmax: c0/c1 of a tile are head g, c2/c3 head g + 8; columns 8 nt + 2t + e.
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const bool ok = keep(8 * nt + 2 * t + e);
            sc[nt][e] = ok ? sc[nt][e] * scale : -3.0e38f;
            sc[nt][2 + e] = ok ? sc[nt][2 + e] * scale : -3.0e38f;
            mx0 = fmaxf(mx0, sc[nt][e]);
            mx1 = fmaxf(mx1, sc[nt][2 + e]);
        }
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const auto ex = [](float x) { return LO ? expf(x) : __expf(x); };
    const float corr0 = ex(m0 - mx0), corr1 = ex(m1 - mx1);
    m0 = mx0;
    m1 = mx1;
    float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const bool ok = keep(8 * nt + 2 * t + e);
            sc[nt][e] = ok ? ex(sc[nt][e] - m0) : 0.0f;
            sc[nt][2 + e] = ok ? ex(sc[nt][2 + e] - m1) : 0.0f;
            ps0 += sc[nt][e];
            ps1 += sc[nt][2 + e];
        }
    }
    sum0 = sum0 * corr0 + ps0;
    sum1 = sum1 * corr1 + ps1;
    // The output's rescale only where a head's running max moved (corr is exactly 1 where it
    // did not: the same bits without the 4 · DT multiplications, most chunks of a long cache).
    if (__any_sync(0xffffffffu, corr0 != 1.0f || corr1 != 1.0f)) {
#pragma unroll
        for (int d = 0; d < DT; d++) {
            o[d][0] *= corr0;
            o[d][1] *= corr0;
            o[d][2] *= corr1;
            o[d][3] *= corr1;
        }
    }
    // O += P · V, 16 rows of the chunk per k-step.
#pragma unroll
    for (int kc2 = 0; kc2 < CH / 16; kc2++) {
        u32 ah[4], al[4];
        split_pair(sc[2 * kc2][0], sc[2 * kc2][1], ah[0], al[0]);
        split_pair(sc[2 * kc2][2], sc[2 * kc2][3], ah[1], al[1]);
        split_pair(sc[2 * kc2 + 1][0], sc[2 * kc2 + 1][1], ah[2], al[2]);
        split_pair(sc[2 * kc2 + 1][2], sc[2 * kc2 + 1][3], ah[3], al[3]);
#pragma unroll
        for (int qd = 0; qd < HD / 16; qd++) {
            u32 b0, b1, b2, b3;
            const u16 *src = vs + (16 * kc2 + (lane & 7) + 8 * ((lane >> 3) & 1)) * PAD +
                             16 * qd + 8 * (lane >> 4);
            unsigned long long a;
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"((unsigned long long)src));
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                         : "r"((u32)a));
            mma16816(o[2 * qd], ah, b0, b1);
            if (LO) mma16816(o[2 * qd], al, b0, b1);
            mma16816(o[2 * qd + 1], ah, b2, b3);
            if (LO) mma16816(o[2 * qd + 1], al, b2, b3);
        }
    }
}

// Q rows h0 .. h0 + GB - 1 of `qb` (HD floats each; rows past GB are zero) as mma A
// fragments: a0 (row g, cols 2t..), a1 (row g + 8), a2 / a3 (cols + 8), hi parts and, with LO,
// lo parts (x = hi + lo to ~2^-22). Shared by attend_mma and pf_attend_mma.
template <int HD, bool LO>
__device__ __forceinline__ void q_frags(const float *qb, int h0, int GB, u32 (*qh)[4],
                                        u32 (*ql)[4]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int row = g + 8 * (r & 1), col = 16 * kk + 2 * t + 8 * (r >> 1);
            float2 x = make_float2(0.0f, 0.0f);
            if (row < GB) x = *(const float2 *)(qb + (size_t)(h0 + row) * HD + col);
            const u16 a = f2h(x.x), b = f2h(x.y);
            qh[kk][r] = (u32)a | ((u32)b << 16);
            if (LO) ql[kk][r] = (u32)f2h(x.x - h2f(a)) | ((u32)f2h(x.y - h2f(b)) << 16);
        }
    }
}

template <int HD, int CH, int NS, bool LO>
__device__ __forceinline__ void attend_mma_hd(const float *q, const u16 *kc, const u16 *vc,
                                              float *part, int n_head, int n_head_kv,
                                              const int *meta, int cap, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int PAD = HD + 8;         // halves per shared row
    constexpr int NT = CH / 8;          // score n-tiles per chunk
    constexpr int KST = HD / 16;        // k-steps of Q · K^T
    constexpr int DT = HD / 8;          // output n-tiles
    constexpr int STAGE = 2 * CH * PAD; // halves per stage: K rows, then V rows
    extern __shared__ __align__(16) unsigned char attn_smem[];
    __shared__ float wm[4][16], wsum[4][16];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int G = n_head / n_head_kv, GB = G < 16 ? G : 16, n_sub = G / GB;
    const int kvh = blockIdx.x / n_sub, h0 = kvh * G + (blockIdx.x % n_sub) * GB;
    const int s = blockIdx.y, n_split = gridDim.y;
    const int first = meta[0], n = meta[1];
    const int kv_dim = n_head_kv * HD;
    u16 *ws = (u16 *)attn_smem + warp * NS * STAGE;
    const int per = (n + n_split - 1) / n_split;
    const int j0 = s * per, j1 = min(n, j0 + per);
    const int cw = j0 + CH * warp;
    const int nc = cw < j1 ? (j1 - cw + 4 * CH - 1) / (4 * CH) : 0;
    // Chunk i of this warp into stage st (one commit group; rows past the share read as 0).
    // A lane copies column piece c (16 bytes) of rows r_l, r_l + RPI, ... of the chunk: its
    // shared and global addresses step by constant strides, the ring wrapped at most once per
    // chunk (its rows are consecutive slots), the chunk's first slot kept incrementally (the
    // split spans fewer rows than the ring holds): no division per chunk. ncu
    // (bench/runs/2026-11-30-h200-o o9, o12) puts the kernel's time in its instruction stream
    // (one warp per scheduler issuing every ~3.3 cycles, 11 % of it waiting on memory); the
    // per-piece address arithmetic was about a third of the PTX per chunk. The same bits
    // (o13: logits digests at depths 0, 4096, 32768 equal); decode 177.0-177.6 → 177.5-178.4
    // tok/s at depth 32768, 162.6-163.4 → 163.4-164.2 at 131072.
    constexpr int PR = HD / 8, RPI = 32 / PR, ITER = CH / RPI;
    const int r_l = lane / PR, c_l = lane % PR;
    int s0 = (first + cw) % cap;
    u32 ws_sh;
    {
        unsigned long long a;
        asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"((unsigned long long)ws));
        ws_sh = (u32)a + 2u * (u32)(r_l * PAD + c_l * 8);
    }
    const u16 *kb = kc + kvh * HD + c_l * 8, *vb = vc + kvh * HD + c_l * 8;
    // K/V rows evict-first in L2, as the weights (mvq1.cu): the same bits, 180.1-180.9 →
    // 180.5-181.5 tok/s at depth 32768 (bench/runs/2026-11-30-h200-p p5).
    const unsigned long long pol = l2_evict_first();
    auto load = [&](int i, int st) {
        const int c0 = cw + 4 * CH * i;
        int sl = s0 + 4 * CH * i;
        if (sl >= cap) sl -= cap;
        sl += r_l;
        if (sl >= cap) sl -= cap;
        u32 dk = ws_sh + 2u * (u32)(st * STAGE);
#pragma unroll
        for (int j = 0; j < ITER; j++) {
            const int r = r_l + RPI * j;
            const size_t off = (size_t)sl * kv_dim;
            const u32 n_bytes = c0 + r < j1 ? 16 : 0;
            asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dk),
                         "l"(kb + off), "r"(n_bytes), "l"(pol)
                         : "memory");
            asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dk + 2u * CH * PAD),
                         "l"(vb + off), "r"(n_bytes), "l"(pol)
                         : "memory");
            dk += 2u * RPI * PAD;
            sl += RPI;
            if (sl >= cap) sl -= cap;
        }
    };
    float m0 = -3.0e38f, m1 = -3.0e38f, sum0 = 0.0f, sum1 = 0.0f;
    float o[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (i < nc) load(i, i);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    // Q after the first chunks' copies are issued (they do not depend on it), so that its
    // loads' latency overlaps theirs (round r: the same bits).
    u32 qh[KST][4], ql[KST][4]; // ql unused without LO
    q_frags<HD, LO>(q, h0, GB, qh, ql);
    for (int i = 0; i < nc; i++) {
        if (i + NS - 1 < nc) load(i + NS - 1, (i + NS - 1) % NS);
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 1) : "memory");
        __syncwarp();
        const u16 *ks = ws + (i % NS) * STAGE, *vs = ks + CH * PAD;
        const int c0 = cw + 4 * CH * i;
        mma_chunk<HD, CH, LO>(ks, vs, qh, ql, o, m0, m1, sum0, sum1, scale,
                              [&](int col) { return c0 + col < j1; });
        __syncwarp();
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);
    // The four warps' partials merged through shared memory (the stages are free now).
    __syncthreads();
    float *wo = (float *)attn_smem; // [4][16][HD]
    if (t == 0) {
        wm[warp][g] = m0;
        wm[warp][g + 8] = m1;
        wsum[warp][g] = sum0;
        wsum[warp][g + 8] = sum1;
    }
#pragma unroll
    for (int d = 0; d < DT; d++) {
        float *r0 = wo + ((size_t)warp * 16 + g) * HD + 8 * d + 2 * t;
        r0[0] = o[d][0];
        r0[1] = o[d][1];
        r0[8 * HD] = o[d][2];
        r0[8 * HD + 1] = o[d][3];
    }
    __syncthreads();
    // Each head row's warp weights exp(m_w - max) once (the same values every output used to
    // recompute: 4 expf per output, ~60 per thread; the same bits), its max and sum.
    __shared__ float wx[4][16];
    if (threadIdx.x < GB) {
        const int r = threadIdx.x;
        const float bm = fmaxf(fmaxf(wm[0][r], wm[1][r]), fmaxf(wm[2][r], wm[3][r]));
        float bs = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            wx[w][r] = expf(wm[w][r] - bm);
            bs += wsum[w][r] * wx[w][r];
        }
        float *out = part + ((size_t)(h0 + r) * n_split + s) * (HD + 2);
        out[0] = bm;
        out[1] = bs;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < GB * HD; idx += blockDim.x) {
        const int r = idx / HD, i = idx % HD;
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) acc += wo[((size_t)w * 16 + r) * HD + i] * wx[w][r];
        part[((size_t)(h0 + r) * n_split + s) * (HD + 2) + 2 + i] = acc;
    }
#endif
}

// Dynamic shared memory: 4 warps × NS stages × 2 × CH × (HD + 8) halves (the host's
// `attn_mma_smem`), at least the 4 × 16 × HD floats of the final merge. Suffix `_h`: f16
// products only (LO false; MmaAttn::f16).
#define ATTEND_MMA_V(HD, CH, NS, LO, SUF)                                                      \
    extern "C" __global__ void __launch_bounds__(128)                                          \
        attend_mma_##HD##_c##CH##s##NS##SUF(const float *q, const u16 *kc, const u16 *vc,      \
                                            float *part, int n_head, int n_head_kv,           \
                                            const int *meta, int cap, float scale) {          \
        attend_mma_hd<HD, CH, NS, LO>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale);   \
    }
#define ATTEND_MMA(HD, CH, NS) ATTEND_MMA_V(HD, CH, NS, true, )
ATTEND_MMA(64, 16, 2)
ATTEND_MMA(64, 16, 4)
ATTEND_MMA(128, 16, 2)
ATTEND_MMA(128, 16, 4)
ATTEND_MMA(128, 32, 2)
ATTEND_MMA_V(64, 16, 2, false, _h)
ATTEND_MMA_V(128, 16, 2, false, _h)
