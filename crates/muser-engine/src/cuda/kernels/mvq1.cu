// One-token (decode) int8-activation matvec kernels for Q4_K and Q6_K, the ones every decode
// step spends its time in. Same numerics as q8act.cu (int8 activations in blocks of 32 with
// scale d and d·Σq; dp4a), different work split: 4 Q4_K or 2 Q6_K rows per warp (RR4/RR6),
// 16-byte weight loads through L1 and evict-first in L2 (`ld_w16`; streaming loads, L1 bypass
// + L2::256B, measured 10-45 % slower on the H200: a lane's quant loads share L1 lines; the
// prefetch-size hints .L2::256B / .L2::128B 5.5 % / 1 % slower, L1 evict-first and the
// non-coherent path no different, bench/runs/2026-11-30-h200-p p7, p8), the Q4_K block
// header as one 16-byte load unpacked branch-free, and Q6_K either in the file layout (2-byte
// loads) or in the split layout written by q6k_split (16-byte loads; what the decode session
// uses).
// Measured on the H200 (matvec only): Q4_K 19968x6656 3,226 GB/s, 6656x19968 3,419; Q6_K split
// 3,133 / 2,903 (bench/runs/2026-11-30-h200-b).
//
// `mvq_seg_*` computes up to four matrices that share one activation row in one launch (the
// Q, K, V and gate projections; the FFN gate and up), each with its own type and output, so a
// layer launches three matvecs instead of seven. `common.cuh` is prepended at compile time.
// Launches whose matrices are all Q6_K (the FFN down projection of the "more bits" layers,
// the LM head) take mvq_seg_44_lb4: 4 rows per warp, 416 blocks for 6,656 rows, where 2 rows
// made 832 blocks, 1.3 waves (6656x19968 split: 38.3 → 31.9 µs, bench/runs/2026-11-30-h200-e).
// The LM head itself takes mvq_flat_q6ks_lb4 (below) where it applies: the same rows as flat
// warps, the same bits.
// The Q/K/V/gate launch can carry QK-norm, RoPE and the KV store as a cluster epilogue
// (mvq_seg_42_lb5_qkv, at the end): 15.7 → 16.1 µs per launch, one 5.6 µs kernel per layer
// fewer, 174.6 → 178.2 tok/s (bench/runs/2026-11-30-h200-f). The FFN gate/up launch can
// carry SwiGLU and its int8 quantization (mvq_gu_swiglu, at the end: blocks own the same 32
// rows of both matrices, no synchronisation between blocks): 42.4 + 5.4 → 41.7 µs per layer,
// 178.2 → 183.4 tok/s (bench/runs/2026-11-30-h200-g).
// The sub-wave launches (Q/K/V/gate: 2-4 loop trips per lane, output projection: 2) run at
// 16.6 and 9.1 µs event-timed in the session, ~2.0 and ~1.7 TB/s; alone, back to back, the
// same launches take 9.9 and 5.6 µs (3.3 and 2.7 TB/s), but there the 33 and 15 MB of weights
// fit in L2 and are read from it launch after launch. Copying every trip past the first into
// shared memory with cp.async at the start (one memory round trip per warp, same bits), with
// the largest shared-memory carveout for 5 blocks of 42.5 KB per SM, measured slower
// everywhere: 16.6 → 22.8 µs, 9.1 → 10.6 µs, the gate/up launch 41.5 → 51.4 µs; 186.0 →
// 173.1 tok/s (sub-wave) and 159.0 (with gate/up). Likely cause, not checked with ncu: the
// 28 KB of L1 left no longer hold the lines that q4k_rows's lanes share (h200-e: 65 % L1
// hits). Branches cuda-mv-r1 (that code) and cuda-mv-tail (only the last trip staged, at most
// 18 KB per block, default carveout: built, not measured); bench/runs/2026-11-30-h200-h.

// Applies the LM head's logit scale and softcap when `post` is set (as scale_softcap).
__device__ __forceinline__ float post_op(float s, int post, float scale, float cap) {
    if (!post) return s;
    const float v = s * scale;
    return cap != 0.0f ? cap * tanhf(v / cap) : v;
}

// The int8 activations of sub-blocks 2k and 2k + 1 of a super-block (a: 2k, c: 2k + 1) and
// their scales d and d·Σq, as a lane of q4k_rows loads them.
struct Q4Act {
    uint4 a0, a1, c0, c1;
    float2 dx, sx;
};

// Lane quarter k's part of the Q4_K super-block at blk (the 16-byte header: d, dmin, scales;
// the quarter's 32 quant bytes: sub-blocks 2k in the low nibbles, 2k + 1 in the high) into
// hd, q0, q1; and the activations of super-block b for quarter k into the Q4Act x. Macros, so
// that each loop keeps its own instruction order (as inline functions they moved address
// arithmetic in q4k_rows's PTX).
// Weight loads marked evict-first in L2 (createpolicy + ld.global.L2::cache_hint; L1 as
// before): the weights stream once per token, and the activations, the KV rows and the lines
// the latency-bound kernels prefetch for the next matvec (DecodeTuning::l2_prefetch) stay.
// The same bits; measured on the H200 (bench/runs/2026-11-30-h200-p p4, the two builds in
// turn, three times): 196.1-197.8 → 201.0-201.8 tok/s at depth 0, 179.4-180.4 → 183.0-184.0
// at depth 32768.
__device__ __forceinline__ uint4 ld_w16(const void *a) {
    uint4 v;
    asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(a), "l"(l2_evict_first()));
    return v;
}
#define Q4K_LOAD(blk, k, hd, q0, q1)                                                           \
    do {                                                                                       \
        hd = ld_w16(blk);                                                                      \
        q0 = ld_w16((blk) + 16 + 32 * (k));                                                    \
        q1 = ld_w16((blk) + 32 + 32 * (k));                                                    \
    } while (0)
#define Q4K_ACT(x, qa, da, sa, b, k)                                                           \
    const int x##_s0i = (b) * 8 + 2 * (k);                                                     \
    const uint4 *x##_av = (const uint4 *)((qa) + (size_t)x##_s0i * 32);                        \
    const Q4Act x = {x##_av[0], x##_av[1], x##_av[2], x##_av[3],                               \
                     *(const float2 *)((da) + x##_s0i), *(const float2 *)((sa) + x##_s0i)}

// dp4a with unsigned bytes in `a` and signed ones in `b` (dp4a.u32.s32).
__device__ __forceinline__ int dp4a_us(u32 a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// A lane's term of one row: its quarter (k: sh = 16 · (k & 1), upper = k >= 2) of a
// super-block against the activations, dp4a over the nibbles, the 6-bit scales and mins
// unpacked branch-free two bytes at a time (get_scale_min_k4 for sub-blocks 2k, 2k + 1).
// HI: the high nibbles taken in place (dp4a_us on q & 0xF0F0F0F0, 16 × their value; the sum,
// an integer, shifted back once): the same bits with a shift per word fewer. Measured on the
// H200 (bench/runs/2026-12-01-h200-y y3): the flat gate/up launch 39.6 → 39.3 µs, but the
// other Q4_K launches slower (down projection 22.3 → 23.3 µs), so only the flat loop takes it.
template <bool HI = false>
__device__ __forceinline__ float q4k_term(const uint4 &hd, const uint4 &q0, const uint4 &q1,
                                          const Q4Act &x, int sh, bool upper) {
    const float d = h2f((u16)(hd.x & 0xFFFF)), dmin = h2f((u16)(hd.x >> 16));
    const u32 b0 = (hd.y >> sh) & 0xFFFF, b1 = (hd.z >> sh) & 0xFFFF;
    const u32 b2 = (hd.w >> sh) & 0xFFFF;
    const u32 scp = upper ? ((b2 & 0x0F0F) | ((b0 & 0xC0C0) >> 2)) : (b0 & 0x3F3F);
    const u32 mp = upper ? (((b2 >> 4) & 0x0F0F) | ((b1 & 0xC0C0) >> 2)) : (b1 & 0x3F3F);
    const u32 q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const int a[8] = {(int)x.a0.x, (int)x.a0.y, (int)x.a0.z, (int)x.a0.w,
                      (int)x.a1.x, (int)x.a1.y, (int)x.a1.z, (int)x.a1.w};
    const int c[8] = {(int)x.c0.x, (int)x.c0.y, (int)x.c0.z, (int)x.c0.w,
                      (int)x.c1.x, (int)x.c1.y, (int)x.c1.z, (int)x.c1.w};
    int i0 = 0, i1 = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        i0 = __dp4a((int)(q[j] & 0x0F0F0F0Fu), a[j], i0);
        if (HI)
            i1 = dp4a_us(q[j] & 0xF0F0F0F0u, c[j], i1);
        else
            i1 = __dp4a((int)((q[j] >> 4) & 0x0F0F0F0Fu), c[j], i1);
    }
    if (HI) i1 >>= 4;  // |i1| < 2^20, a multiple of 16
    const float d0 = d * (int)(scp & 0xFF), d1 = d * (int)(scp >> 8);
    const float m0f = dmin * (int)(mp & 0xFF), m1f = dmin * (int)(mp >> 8);
    return d0 * x.dx.x * (float)i0 - m0f * x.sx.x + d1 * x.dx.y * (float)i1 - m1f * x.sx.y;
}

// q4k_rows's per-lane constants (lane, super-blocks per row nb, row bytes, quarter k, its
// scale shift and half) and RR zeroed accumulators (inside a function with an `n_in`
// parameter; also the microbenchmarks' variants of the loop, tools/bench/mvbw).
#define Q4K_LANE(RR)                                                                           \
    const int lane = threadIdx.x & 31;                                                         \
    const int nb = n_in >> 8;                                                                  \
    const size_t row_bytes = (size_t)nb * 144;                                                 \
    const int k = lane & 3;                                                                    \
    const int sh = 16 * (k & 1);                                                               \
    const bool upper = k >= 2;                                                                 \
    float acc[RR];                                                                             \
    _Pragma("unroll") for (int r = 0; r < RR; r++) acc[r] = 0.0f

// The body of q4k_rows / q4k_rows_k: the lane's super-blocks b = START, START + 8, .. < END.
// A macro so that q4k_rows compiles as it did before q4k_rows_k existed (the same SASS).
#define Q4K_ROWS_BODY(START, END)                                                              \
    Q4K_LANE(RR);                                                                              \
    for (int b = START; b < END; b += 8) {                                                     \
        uint4 hd[RR], q0[RR], q1[RR];                                                          \
        _Pragma("unroll") for (int r = 0; r < RR; r++) {                                       \
            const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 144; \
            Q4K_LOAD(blk, k, hd[r], q0[r], q1[r]);                                             \
        }                                                                                      \
        Q4K_ACT(x, qa, da, sa, b, k);                                                          \
        _Pragma("unroll") for (int r = 0; r < RR; r++)                                         \
            acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);                             \
    }                                                                                          \
    _Pragma("unroll") for (int r = 0; r < RR; r++) {                                           \
        const float s = warp_sum(acc[r]);                                                      \
        if (lane == 0 && row0 + r < n_out) y[r] = post_op(s, post, scale, cap);                \
    }

// NAME: rows row0 .. row0 + RR of the matrix, written to y[0 .. RR) (those below n_out);
// NAME_k: the same over super-blocks [sb0, sb1) of each row only (the K range split over
// blocks of tools/bench/mvbw/splitk.cu; not used by the session, bench/runs/2026-11-30-h200-p).
#define ROWS_FNS(NAME, BODY)                                                                   \
    template <int RR>                                                                          \
    __device__ __forceinline__ void NAME(const u8 *w, const signed char *qa, const float *da,  \
                                         const float *sa, float *y, int n_in, int n_out,       \
                                         int row0, int post, float scale, float cap) {         \
        BODY(lane >> 2, nb)                                                                    \
    }                                                                                          \
    template <int RR>                                                                          \
    __device__ __forceinline__ void NAME##_k(const u8 *w, const signed char *qa,               \
                                             const float *da, const float *sa, float *y,       \
                                             int n_in, int n_out, int row0, int sb0, int sb1,  \
                                             int post, float scale, float cap) {               \
        BODY(sb0 + (lane >> 2), sb1)                                                           \
    }

// Q4_K rows; lane = (block slot 0..7, quarter k 0..3).
ROWS_FNS(q4k_rows, Q4K_ROWS_BODY)

__device__ __forceinline__ u32 ld_u16(const u8 *p) { return *(const u16 *)p; }

// Rows row0 .. row0 + RR of a Q6_K matrix (written as q4k_rows). Lane = (block slot 0..3, half h, quarter qr) as
// in q8act.cu; 210-byte blocks are only 2-byte aligned, hence the 2-byte loads.
template <int RR>
__device__ __forceinline__ void q6k_rows(const u8 *w, const signed char *qa, const float *da,
                                         const float *sa, float *y, int n_in, int n_out,
                                         int row0, int post, float scale, float cap) {
    const int lane = threadIdx.x & 31;
    const int nb = n_in >> 8;
    const size_t row_bytes = (size_t)nb * 210;
    const int h = (lane >> 2) & 1, qr = lane & 3;
    float acc[RR];
#pragma unroll
    for (int r = 0; r < RR; r++) acc[r] = 0.0f;
    for (int b = lane >> 3; b < nb; b += 4) {
        int q[RR][4][2];
        float ds[RR][4];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 210;
            const float d = h2f((u16)ld_u16(blk + 208));
            const signed char *sc = (const signed char *)(blk + 192);
            const u8 *ql = blk + 64 * h + 8 * qr;
            const u8 *qc = blk + 64 * h + 32 + 8 * qr;
            const u8 *qh = blk + 128 + 32 * h + 8 * qr;
            const int is = qr / 2;
#pragma unroll
            for (int u = 0; u < 4; u++) ds[r][u] = d * sc[8 * h + is + 2 * u];
#pragma unroll
            for (int wd = 0; wd < 2; wd++) {
                const u32 lo = ld_u16(ql + 4 * wd) | (ld_u16(ql + 4 * wd + 2) << 16);
                const u32 co = ld_u16(qc + 4 * wd) | (ld_u16(qc + 4 * wd + 2) << 16);
                const u32 hi = ld_u16(qh + 4 * wd) | (ld_u16(qh + 4 * wd + 2) << 16);
                const u32 b1 = (lo & 0x0F0F0F0Fu) | ((hi << 4) & 0x30303030u);
                const u32 b2 = (co & 0x0F0F0F0Fu) | ((hi << 2) & 0x30303030u);
                const u32 b3 = ((lo >> 4) & 0x0F0F0F0Fu) | (hi & 0x30303030u);
                const u32 b4 = ((co >> 4) & 0x0F0F0F0Fu) | ((hi >> 2) & 0x30303030u);
                q[r][0][wd] = (int)__vsub4(b1, 0x20202020u);
                q[r][1][wd] = (int)__vsub4(b2, 0x20202020u);
                q[r][2][wd] = (int)__vsub4(b3, 0x20202020u);
                q[r][3][wd] = (int)__vsub4(b4, 0x20202020u);
            }
        }
        int a[4][2];
        float dx[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int sub = b * 8 + 4 * h + u;
            const uint2 v = *(const uint2 *)(qa + (size_t)sub * 32 + 8 * qr);
            a[u][0] = (int)v.x;
            a[u][1] = (int)v.y;
            dx[u] = da[sub];
        }
#pragma unroll
        for (int r = 0; r < RR; r++) {
            float s = 0.f;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int i = __dp4a(q[r][u][1], a[u][1], __dp4a(q[r][u][0], a[u][0], 0));
                s += ds[r][u] * dx[u] * (float)i;
            }
            acc[r] += s;
        }
    }
#pragma unroll
    for (int r = 0; r < RR; r++) {
        const float s = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[r] = post_op(s, post, scale, cap);
    }
}

// Q6_K in the split layout (common.cuh; `q6k_split` below writes it): each part of a block
// (ql[128], qh[64], scales[16], d) 16-byte aligned, a loop trip's parts of a row side by side
// so that each load instruction of the warp reads 512 contiguous bytes (until round z the
// blocks' 208 bytes in file order and every d after them: the same loads, 31.0 → 29.5 µs for
// the FFN down projection). Lane = (block slot 0..7, half h, part p): 16 elements
// l = 16p .. 16p + 15 of half h in each of its four 32-element groups u, from three 16-byte
// loads (ql, ql + 32, qh) where the file's 210-byte blocks allow only 2-byte loads (13 loads
// per 24 bytes; 1.9-2.4 TB/s measured).
// The 6-bit quants q (0..63, so also valid signed bytes) go into dp4a as they are, and
// Σ (q − 32)·a is taken as Σ q·a − 32 Σ a, Σ a once per group for all of the warp's rows
// (integers: the same bits as subtracting 32 from every byte first, which cost ~3
// instructions per word with __vsub4).
// The body of q6ks_rows / q6ks_rows_k (a macro for the reason of Q4K_ROWS_BODY); PF: a
// statement after each trip's weight loads (empty here; tools/bench/mvbw/q6k.cu's prefetch
// variants).
#define Q6KS_ROWS_BODY(START, END) Q6KS_ROWS_BODY_PF(START, END, )
// Lane (half h, part p)'s term of one row of a split-Q6_K trip: its three 16-byte loads (lo =
// ql, hi = ql + 32, qh), the row's 8 scale bytes of half h (sc) and d, against the activations
// of the trip's four groups (a, dx; a32: 32 × the sum of each group's 16 activations).
__device__ __forceinline__ float q6ks_term(const uint4 &lo, const uint4 &hi, const uint4 &qh,
                                           uint2 sc, float d, const uint4 *a, const float *dx,
                                           const int *a32, int p) {
    const u32 l4[4] = {lo.x, lo.y, lo.z, lo.w};
    const u32 c4[4] = {hi.x, hi.y, hi.z, hi.w};
    const u32 h4[4] = {qh.x, qh.y, qh.z, qh.w};
    int iu[4] = {0, 0, 0, 0};
#pragma unroll
    for (int wd = 0; wd < 4; wd++) {
        const u32 b1 = (l4[wd] & 0x0F0F0F0Fu) | ((h4[wd] << 4) & 0x30303030u);
        const u32 b2 = (c4[wd] & 0x0F0F0F0Fu) | ((h4[wd] << 2) & 0x30303030u);
        const u32 b3 = ((l4[wd] >> 4) & 0x0F0F0F0Fu) | (h4[wd] & 0x30303030u);
        const u32 b4 = ((c4[wd] >> 4) & 0x0F0F0F0Fu) | ((h4[wd] >> 2) & 0x30303030u);
        const int aw[4] = {(int)(wd == 0 ? a[0].x : wd == 1 ? a[0].y : wd == 2 ? a[0].z : a[0].w),
                           (int)(wd == 0 ? a[1].x : wd == 1 ? a[1].y : wd == 2 ? a[1].z : a[1].w),
                           (int)(wd == 0 ? a[2].x : wd == 1 ? a[2].y : wd == 2 ? a[2].z : a[2].w),
                           (int)(wd == 0 ? a[3].x : wd == 1 ? a[3].y : wd == 2 ? a[3].z : a[3].w)};
        iu[0] = __dp4a((int)b1, aw[0], iu[0]);
        iu[1] = __dp4a((int)b2, aw[1], iu[1]);
        iu[2] = __dp4a((int)b3, aw[2], iu[2]);
        iu[3] = __dp4a((int)b4, aw[3], iu[3]);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) iu[u] -= a32[u];
    // Scale of group u for these elements: scales[8h + p + 2u] (bytes of sc).
    const u32 s01 = sc.x, s23 = sc.y;
    float s = 0.f;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const u32 word = u < 2 ? s01 : s23;
        const int sv = (int)(signed char)((word >> (8 * (p + 2 * (u & 1)))) & 0xFF);
        s += (d * sv) * dx[u] * (float)iu[u];
    }
    return s;
}

// The split-Q6_K lane constants and RR zeroed accumulators (as Q4K_LANE).
#define Q6KS_LANE(RR)                                                                          \
    const int lane = threadIdx.x & 31;                                                         \
    const int nb = n_in >> 8;                                                                  \
    const int h = (lane >> 1) & 1, p = lane & 1;                                               \
    float acc[RR];                                                                             \
    _Pragma("unroll") for (int r = 0; r < RR; r++) acc[r] = 0.0f
// Rows ROW0 .. ROW0 + RR of super-block b into lo, hi, qh, sc, d [0 .. RR): one part each of
// the trip's tile (common.cuh's split layout), lane quarter q = lane & 3 = 2h + p. The rows
// lie in one group of 4 (RR divides 4, ROW0 % RR == 0); rows past n_out read the group's
// padding (zeros), which no warp stores. NB: the super-blocks of a (virtual) row: nb, or
// u·nb for the layout in u units with ROW0 and b virtual (common.cuh's q6s_part_u).
#define Q6KS_LOADS(RR, ROW0, b) Q6KS_LOADS_NB(RR, ROW0, b, nb)
#define Q6KS_LOADS_NB(RR, ROW0, b, NB)                                                         \
    do {                                                                                       \
        const int s_ = (b) & 7, m_ = min(8, (NB) - ((b) & ~7));                                \
        const u8 *tile_ = w + (size_t)((ROW0) >> 2) * q6s_group_bytes(NB) +                    \
                          (size_t)((b) >> 3) * Q6S_TRIP_BYTES;                                 \
        const int l_ = 16 * (4 * s_ + (lane & 3));                                             \
        _Pragma("unroll") for (int r = 0; r < (RR); r++) {                                     \
            const u8 *part_ = tile_ + (size_t)(((ROW0) & 3) + r) * (208 * m_ + 16);            \
            lo[r] = ld_w16(part_ + l_);                                                        \
            hi[r] = ld_w16(part_ + 64 * m_ + l_);                                              \
            qh[r] = ld_w16(part_ + 128 * m_ + l_);                                             \
            sc[r] = *(const uint2 *)(part_ + 192 * m_ + 16 * s_ + 8 * h);                      \
            d[r] = h2f(*(const u16 *)(part_ + 208 * m_ + 2 * s_));                             \
        }                                                                                      \
    } while (0)
// The activations of super-block b's groups u = 0..3 (sub-block b * 8 + 4h + u), elements
// 16p .. 16p + 15, and 32 × the sum of the lane's 16 of each (shared by the warp's rows).
#define Q6KS_ACT(b)                                                                            \
    uint4 a[4];                                                                                \
    float dx[4];                                                                               \
    _Pragma("unroll") for (int u = 0; u < 4; u++) {                                            \
        const int sub = (b) * 8 + 4 * h + u;                                                   \
        a[u] = *(const uint4 *)(qa + (size_t)sub * 32 + 16 * p);                               \
        dx[u] = da[sub];                                                                       \
    }                                                                                          \
    int a32[4];                                                                                \
    _Pragma("unroll") for (int u = 0; u < 4; u++) {                                            \
        const int one = 0x01010101;                                                            \
        a32[u] = 32 * __dp4a((int)a[u].w, one, __dp4a((int)a[u].z, one,                        \
                             __dp4a((int)a[u].y, one, __dp4a((int)a[u].x, one, 0))));          \
    }
// The warp's RR row sums into y (rows below n_out), through post_op.
#define ROWS_STORE(RR)                                                                         \
    _Pragma("unroll") for (int r = 0; r < RR; r++) {                                           \
        const float v = warp_sum(acc[r]);                                                      \
        if (lane == 0 && row0 + r < n_out) y[r] = post_op(v, post, scale, cap);                \
    }

#define Q6KS_ROWS_BODY_PF(START, END, PF)                                                      \
    Q6KS_LANE(RR);                                                                             \
    for (int b = START; b < END; b += 8) {                                                     \
        uint4 lo[RR], hi[RR], qh[RR];                                                          \
        uint2 sc[RR];                                                                          \
        float d[RR];                                                                           \
        Q6KS_LOADS(RR, row0, b);                                                               \
        PF                                                                                     \
        Q6KS_ACT(b)                                                                            \
        _Pragma("unroll") for (int r = 0; r < RR; r++)                                         \
            acc[r] += q6ks_term(lo[r], hi[r], qh[r], sc[r], d[r], a, dx, a32, p);              \
    }                                                                                          \
    ROWS_STORE(RR)

// Split-layout Q6_K rows.
ROWS_FNS(q6ks_rows, Q6KS_ROWS_BODY)

// The flat loops' unit completion (mvq_flat_q6ks_lb4, gu_swiglu_flat): every unit whose last
// column was in the trip starting at column g0 has its RR rows summed over the warp from
// accumulator set done & 1, handed to store(done, r, sum), and that set cleared; returns the
// units done.
template <int RR, int UNITS, typename F>
__device__ __forceinline__ int flat_units_done(int done, int nb, int g0, float *acc0,
                                               float *acc1, F store) {
    while (done < UNITS && (done + 1) * nb <= g0 + 8) {
#pragma unroll
        for (int r = 0; r < RR; r++) {
            store(done, r, warp_sum(done & 1 ? acc1[r] : acc0[r]));
            if (done & 1)
                acc1[r] = 0.0f;
            else
                acc0[r] = 0.0f;
        }
        done++;
    }
    return done;
}

// Split-Q6_K rows with each warp's FLAT_UNITS units of 4 rows as one stream of super-block
// columns (the LM head, `DecodeTuning::lm_flat`), as the flat gate/up launch does for Q4_K:
// at 26 super-blocks a row, 13 full loop trips per warp instead of 4 × 4 whose last has 2 of 8
// slots loading. Unit i's super-blocks sit on lanes shifted by i · nb mod 8 slots, a multiple
// of 8 lanes for even nb, which the butterfly warp sum adds in the same pairs; with nb >= 4 a
// trip touches at most two units (one accumulator set each): the same bits as q6ks_rows.
// The weights in the split layout in FLAT_UNITS units (common.cuh's q6s_part_u): a warp's
// 16 rows are one stream, its loop trip one tile (each load instruction 512 contiguous bytes).
// Measured on the H200 (tools/bench/mvbw/lmflat.cu, bench/runs/2026-12-01-h200-y y7): the LM
// head 202,048 x 6,656 281-288 → 260-261 µs (a plain read of its bytes: 246); on the 1-unit
// layout of round z (each row group's trip one tile, a flat trip across two) 278 µs
// (bench/runs/2026-12-01-h200-z z2).
//
// With `kw` (device words: the low and high halves of a 64-bit key's address, 0: none; read
// from the step's parameters, so that a captured graph replays with each step's key), the
// greedy argmax is folded in: each warp's lane 0 keeps the largest argmax_key of its rows'
// outputs and merges it into the key with one atomicMax (CudaSession::greedy_fed: the next
// step's embedding gather decodes it), instead of argmax_f32_grid's launch over the logits.
#define FLAT_UNITS 4
extern "C" __global__ void __launch_bounds__(128, 4)
    mvq_flat_q6ks_lb4(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
                      const float *sa, int n_in, int post, float scale, float cap,
                      const u32 *kw) {
    constexpr int RR = 4;
    const int rowb = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * RR * FLAT_UNITS;
    if (rowb >= n_out) return;
    unsigned long long *key = nullptr;
    if (kw && (threadIdx.x & 31) == 0)
        key = (unsigned long long *)((unsigned long long)kw[0] | ((unsigned long long)kw[1] << 32));
    unsigned long long best = 0ull;
    Q6KS_LANE(RR);
    const int s = lane >> 2;
    float acc1[RR] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int total = FLAT_UNITS * nb;
    int done = 0;
    for (int g0 = 0; g0 < total; g0 += 8) {
        const int g = min(g0 + s, total - 1);
        const int i = g / nb, b = g - i * nb;
        uint4 lo[RR], hi[RR], qh[RR];
        uint2 sc[RR];
        float d[RR];
        // The warp's stream rowb / 16 is virtual rows rowb / 4 .. + 3, g their column.
        Q6KS_LOADS_NB(RR, rowb >> 2, g, total);
        Q6KS_ACT(b)
        const bool valid = g0 + s < total, odd = i & 1;
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const float t = q6ks_term(lo[r], hi[r], qh[r], sc[r], d[r], a, dx, a32, p);
            if (valid && !odd) acc[r] += t;
            if (valid && odd) acc1[r] += t;
        }
        done = flat_units_done<RR, FLAT_UNITS>(done, nb, g0, acc, acc1, [&](int u, int r, float v) {
            const int row = rowb + RR * u + r;
            if (lane == 0 && row < n_out) {
                const float o = post_op(v, post, scale, cap);
                y[row] = o;
                const unsigned long long k = argmax_key(o, row);
                if (k > best) best = k;
            }
        });
    }
    if (key && best) atomicMax(key, best);
}

// Rewrites an n_out × (256 nb) Q6_K matrix (210-byte blocks, file layout) into the split
// layout in u units (common.cuh; u = 1: the plain split layout), one thread per block; `dst`
// holds q6s_bytes_u(n_out, nb, u) bytes, zeroed (the last stream's padding rows stay zero).
// The file's blocks are only 2-byte aligned.
__device__ __forceinline__ void q6s_copy16(u8 *dst, const u8 *src) {
    const u16 *s = (const u16 *)src;
    *(uint4 *)dst = make_uint4((u32)s[0] | ((u32)s[1] << 16), (u32)s[2] | ((u32)s[3] << 16),
                               (u32)s[4] | ((u32)s[5] << 16), (u32)s[6] | ((u32)s[7] << 16));
}
extern "C" __global__ void q6k_split(const u8 *src, u8 *dst, int n_out, int nb, int u) {
    const unsigned long long n = (unsigned long long)n_out * nb;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const int row = (int)(i / nb), b = (int)(i % nb);
        int m, s;
        u8 *part = (u8 *)q6s_part_u(dst, nb, u, row, b, &m, &s);
        const u8 *blk = src + i * 210;
        for (int q = 0; q < 4; q++) {
            const int h = q >> 1, p = q & 1, l = 16 * (4 * s + q);
            q6s_copy16(part + l, blk + 64 * h + 16 * p);
            q6s_copy16(part + 64 * m + l, blk + 64 * h + 32 + 16 * p);
            q6s_copy16(part + 128 * m + l, blk + 128 + 32 * h + 16 * p);
        }
        q6s_copy16(part + 192 * m + 16 * s, blk + 192);
        *(u16 *)(part + 208 * m + 2 * s) = *(const u16 *)(blk + 208);
    }
}


// Segment types (the host's `type_code`).
#define SEG_Q4_K 0
#define SEG_Q6_K 1
#define SEG_Q6_K_SPLIT 2

// Rows of segment block `blk` computed by this warp (warps per block × RR4 for Q4_K, × RR6
// for Q6_K, both layouts), written to y (the segment's output, row-indexed).
template <int RR4, int RR6>
__device__ __forceinline__ void seg_rows(int type, const u8 *w, const signed char *qa,
                                         const float *da, const float *sa, float *y, int n_in,
                                         int n_out, int blk, int post, float scale, float cap) {
    const int warp = blk * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int row0 = warp * (type == SEG_Q4_K ? RR4 : RR6);
    if (row0 >= n_out) return;
    if (type == SEG_Q4_K)
        q4k_rows<RR4>(w, qa, da, sa, y + row0, n_in, n_out, row0, post, scale, cap);
    else if (type == SEG_Q6_K_SPLIT)
        q6ks_rows<RR6>(w, qa, da, sa, y + row0, n_in, n_out, row0, post, scale, cap);
    else
        q6k_rows<RR6>(w, qa, da, sa, y + row0, n_in, n_out, row0, post, scale, cap);
}

// Up to four matrices (segment i: weights wi, type ti, ni rows, output yi, its blocks
// starting at block bi; unused segments have ni = 0) over one int8 activation row.
#define SEG_ARGS                                                                               \
    const u8 *w0, int t0, int n0, float *y0, const u8 *w1, int t1, int n1, float *y1, int b1,  \
        const u8 *w2, int t2, int n2, float *y2, int b2, const u8 *w3, int t3, int n3,         \
        float *y3, int b3, const signed char *qa, const float *da, const float *sa, int n_in

#define SEG_ENTRY(NAME, RR4, RR6, MINB)                                                        \
    extern "C" __global__ void __launch_bounds__(128, MINB)                                    \
        NAME(SEG_ARGS, int post, float scale, float cap) {                                     \
        const int b = blockIdx.x;                                                              \
        if (b >= b3 && n3 > 0)                                                                 \
            seg_rows<RR4, RR6>(t3, w3, qa, da, sa, y3, n_in, n3, b - b3, post, scale, cap);    \
        else if (b >= b2 && n2 > 0)                                                            \
            seg_rows<RR4, RR6>(t2, w2, qa, da, sa, y2, n_in, n2, b - b2, post, scale, cap);    \
        else if (b >= b1 && n1 > 0)                                                            \
            seg_rows<RR4, RR6>(t1, w1, qa, da, sa, y1, n_in, n1, b - b1, post, scale, cap);    \
        else                                                                                   \
            seg_rows<RR4, RR6>(t0, w0, qa, da, sa, y0, n_in, n0, b, post, scale, cap);         \
    }

// Measured on the H200 (19968 x 6656, GB/s, Q4_K / Q6_K): rows 2: 3054/2151, rows 4:
// 3205/1942. 2 Q4_K rows per warp for the sub-wave Q/K/V/gate and output projections, or
// their K range split over the block's warps, measured no faster in the 30B session
// (bench/runs/2026-11-30-h200-e).
SEG_ENTRY(mvq_seg_42, 4, 2, 1)
SEG_ENTRY(mvq_seg_42_lb5, 4, 2, 5)
SEG_ENTRY(mvq_seg_82, 8, 2, 1)
// Q6_K rows per warp for the FFN down projection (6,656 rows: RR6 = 2 makes 832 blocks, 1.3
// waves at 5 blocks per SM; 4 makes 416, one partial wave as the Q4_K down projection).
SEG_ENTRY(mvq_seg_44_lb4, 4, 4, 4)
SEG_ENTRY(mvq_seg_41_lb5, 4, 1, 5)

// One matrix without the segment dispatch (DecodeTuning::one_matrix): the output projection
// and the Q4_K FFN down projection through mvq_one_q4k_lb5 (mvq_seg_42_lb5's warps and
// loop), the Q6_K down projection through mvq_one_q6ks_lb4 (mvq_seg_44_lb4's, split layout):
// the same rows per warp and the same loops, so the same bits. Measured alone on the H200
// (tools/bench/mvbw/conv.cu at commit 8b4c0bf, bench/runs/2026-11-30-h200-o o3): 6656 x 4096
// Q4_K 7.16 µs, 6656 x 19968 Q4_K 21.7 µs, where the segment kernel took 7.4-7.6 and 22.4
// (h200-n); in the step 195.2 → 196.5 tok/s (o5). Any number of warps per block (each warp
// its own 4 rows): the session launches one (DecodeTuning::one_warps, round s: +0.2 %).
#define ONE_ENTRY(NAME, ROWS, MINB)                                                            \
    extern "C" __global__ void __launch_bounds__(128, MINB)                                    \
        NAME(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,         \
             const float *sa, int n_in) {                                                      \
        const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 4;            \
        if (row0 >= n_out) return;                                                             \
        ROWS<4>(w, qa, da, sa, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);                    \
    }
ONE_ENTRY(mvq_one_q4k_lb5, q4k_rows, 5)
ONE_ENTRY(mvq_one_q6ks_lb4, q6ks_rows, 4)

// Tail prefetch (DecodeTuning::tail_prefetch): the `_tp` entries below are the kernels above
// with four L2 prefetch ranges (PF_ARGS) of the next matvec's weights; each block, once its own
// rows are written, issues `prefetch.global.L2` for its share of their lines (block b of the
// grid: lines b · blockDim + thread, strided by the grid), so that the blocks that finish first
// keep DRAM streaming the next launch's bytes while the launch's last warps finish. A prefetch
// is a hint: the same bits as the plain entries.
#define ONE_ENTRY_TP(NAME, ROWS, MINB)                                                         \
    extern "C" __global__ void __launch_bounds__(128, MINB)                                    \
        NAME##_tp(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,    \
                  const float *sa, int n_in, PF_ARGS) {                                        \
        const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 4;            \
        if (row0 < n_out) ROWS<4>(w, qa, da, sa, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);  \
        prefetch_ranges(PF_PASS, blockIdx.x, gridDim.x);                                       \
    }
ONE_ENTRY_TP(mvq_one_q4k_lb5, q4k_rows, 5)
ONE_ENTRY_TP(mvq_one_q6ks_lb4, q6ks_rows, 4)

// The Q (segment 0), K (1), V (2) and gate (3) projections with qk_norm_rope_store folded in
// (sm_90, launched in clusters of hd / (4 RR4) blocks): a cluster of the Q or K segment holds
// one head (both Q4_K), each block 4 RR4 of its rows. Each block pushes its rows into every
// block's copy of the head (common.cuh's push_*: st.async counted on the receiver's mbarrier);
// once its copy is whole, every warp takes the sum of squares in qk_norm_rope_store's order
// (head_sumsq), then each block normalizes, rotates (qk_pair) and writes its own rows, and for
// K their f16 copy into cache row *slot_p. V blocks write their rows' f16 copy there too. No
// block leaves before the cluster has received (push_leave). The host launches this only when
// every segment's blocks are whole clusters. Same bits as the separate kernel.
// By pushes instead of remote loads between two release/acquire cluster barriers: 15.37 →
// 15.05 µs per launch (event-timed; bench/runs/2026-12-02-h200-a a3).
template <int RR4, int RR6>
__device__ __forceinline__ void seg_qkv(SEG_ARGS, const float *qw, const float *kw, int hd,
                                        float eps, const float *cs, int rope, u16 *kc,
                                        u16 *vc, const int *slot_p) {
    __shared__ __align__(16) float vals[4 * RR4];
    const int b = blockIdx.x;
    if (b >= b3) {
        seg_rows<RR4, RR6>(t3, w3, qa, da, sa, y3, n_in, n3, b - b3, 0, 1.0f, 0.0f);
        return;
    }
    const size_t row = (size_t)(*slot_p) * n1;
    if (b >= b2) {
        seg_rows<RR4, RR6>(t2, w2, qa, da, sa, y2, n_in, n2, b - b2, 0, 1.0f, 0.0f);
        __syncthreads();
        const int rpb = (t2 == SEG_Q4_K ? RR4 : RR6) * (int)(blockDim.x >> 5);
        const int r0 = (b - b2) * rpb;
        for (int i = threadIdx.x; i < rpb && r0 + i < n2; i += blockDim.x)
            vc[row + r0 + i] = f2h(y2[r0 + i]);
        return;
    }
    // The head's hd values (at most 8 blocks of 4 RR4 rows: the host's cluster limit), pushed
    // by every block of the cluster (common.cuh's push_*).
    __shared__ float4 head4[8 * RR4];
    __shared__ unsigned long long pbar;
    push_init(&pbar, 1, 4 * hd);
    const bool is_k = b >= b1;
    const int rb = 4 * RR4, blk = is_k ? b - b1 : b, warp = threadIdx.x >> 5;
    float *y = is_k ? y1 : y0;
    q4k_rows<RR4>(is_k ? w1 : w0, qa, da, sa, vals + warp * RR4, n_in, is_k ? n1 : n0,
                  blk * rb + warp * RR4, 0, 1.0f, 0.0f);
    __syncthreads();
    push_ready();
    {
        // Thread t: the block's float4 t % RR4 to rank t / RR4 (rb / 4 = RR4 per block).
        const int t = threadIdx.x, c = hd / rb;
        if (t < RR4 * c)
            push_f4(&head4[cluster_rank() * RR4 + t % RR4], t / RR4,
                    ((const float4 *)vals)[t % RR4], &pbar);
    }
    push_wait(&pbar);
    push_done();
    const float *head = (const float *)head4;
    const float ss = head_sumsq(hd, [&](int i) { return head[i]; });
    const float scale = rsqrtf(ss / hd + eps);
    if ((int)threadIdx.x < rb / 2) {
        const int j = 2 * threadIdx.x, i = (blk * rb) % hd + j;
        const float *w = is_k ? kw : qw;
        const float2 r = qk_pair(vals[j], vals[j + 1], scale, w[i], w[i + 1], rope, cs[i],
                                 cs[i + 1]);
        y[blk * rb + j] = r.x;
        y[blk * rb + j + 1] = r.y;
        if (is_k) {
            kc[row + blk * rb + j] = f2h(r.x);
            kc[row + blk * rb + j + 1] = f2h(r.y);
        }
    }
    push_leave();
}

#define SEG_QKV_ENTRY(NAME, RR4, RR6, MINB)                                                    \
    extern "C" __global__ void __launch_bounds__(128, MINB)                                    \
        NAME(SEG_ARGS, const float *qw, const float *kw, int hd, float eps, const float *cs,   \
             int rope, u16 *kc, u16 *vc, const int *slot_p) {                                  \
        seg_qkv<RR4, RR6>(w0, t0, n0, y0, w1, t1, n1, y1, b1, w2, t2, n2, y2, b2, w3, t3, n3,  \
                          y3, b3, qa, da, sa, n_in, qw, kw, hd, eps, cs, rope, kc, vc,         \
                          slot_p);                                                             \
    }
SEG_QKV_ENTRY(mvq_seg_42_lb5_qkv, 4, 2, 5)

// mvq_seg_42_lb5_qkv with the tail prefetch (ONE_ENTRY_TP's; after the cluster epilogue).
extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_seg_42_lb5_qkv_tp(SEG_ARGS, const float *qw, const float *kw, int hd, float eps,
                          const float *cs, int rope, u16 *kc, u16 *vc, const int *slot_p,
                          PF_ARGS) {
    seg_qkv<4, 2>(w0, t0, n0, y0, w1, t1, n1, y1, b1, w2, t2, n2, y2, b2, w3, t3, n3, y3, b3, qa,
                  da, sa, n_in, qw, kw, hd, eps, cs, rope, kc, vc, slot_p);
    prefetch_ranges(PF_PASS, blockIdx.x, gridDim.x);
}

// The FFN gate and up projections (both Q4_K) with SwiGLU and its int8 quantization folded
// in, without any synchronisation between blocks: block b computes the same 32 rows
// 32b .. 32b + 31 of both matrices, so that it holds a whole quantization block. Its 16 units
// of 4 rows (0-7: gate, 8-15: up; q4k_rows<4> as mvq_seg_42_lb5's warps, so the same bits)
// are taken by the 4 warps in 4 passes and land in shared memory; then warp 0 computes
// silu(g) · u (silu_mul, as swiglu_q8) of the 32 rows, writes them to h and quantizes them
// (quant_block32) into qo/dout/so, which must not be the activation row qa that other blocks
// are still reading. n_ff % 32 == 0 (the host checks).
// 4 warps × 4 passes at 5 blocks per SM keeps mvq_seg_42_lb5's 20 warps per SM, and the
// 624 blocks of n_ff = 19968 fit in one wave (660 on the H200): 41.7 µs per launch where
// the segment kernel took 42.4 and swiglu_q8 5.4 more (event-timed), 178.2 → 183.4 tok/s.
// 8 warps × 2 passes (16 warps per SM, 2.4 waves) measured 178.0 tok/s, 16 × 1 (16 or 32
// warps per SM, 4.7 or 2.4 waves) 170.0-171.8 (bench/runs/2026-11-30-h200-g r1).
#define GU_PASSES 4

// silu(g) · u of the block's 32 rows (gu: 32 gate values, then 32 up values) by warp 0, into
// h and its int8 block (quant_block32) for the down projection.
__device__ __forceinline__ void gu_swiglu_store(const float *gu, int warp, int r0, float *h,
                                                signed char *qo, float *dout, float *so) {
    if (warp == 0) {
        const int lane = threadIdx.x & 31;
        const float r = silu_mul(gu[lane], gu[32 + lane]);
        h[r0 + lane] = r;
        quant_block32(r, blockIdx.x, qo, dout, so);
    }
}

extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
                  const float *da, const float *sa, int n_in, signed char *qo, float *dout,
                  float *so) {
    __shared__ float gu[64];
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32;
#pragma unroll 1
    for (int p = 0; p < GU_PASSES; p++) {
        const int u = p * 4 + warp;
        q4k_rows<4>(u < 8 ? wg : wu, qa, da, sa, gu + 4 * u, n_in, n_ff, r0 + 4 * (u & 7), 0,
                    1.0f, 0.0f);
    }
    __syncthreads();
    gu_swiglu_store(gu, warp, r0, h, qo, dout, so);
}

// mvq_gu_swiglu with each warp's four units of 4 rows (unit i: u = 4i + warp) taken as one
// stream of GU_PASSES · nb super-block columns, 8 per loop trip, so that a unit's last
// columns share a trip with the next unit's first: at n_in 6656 (26 super-blocks) 13 trips
// instead of 16, every lane loading in each (measured alone on the H200: 40.3 → 39.1 µs,
// tools/bench/mvbw, bench/runs/2026-11-30-h200-n). Lane (slot s, quarter k) sees the
// super-blocks of unit i that lane s - i · nb (mod 8 slots) of q4k_rows sees, in the same
// order; for even nb that is a shift by a multiple of 8 lanes, which warp_sum's butterfly adds
// in the same pairs, so the same bits as mvq_gu_swiglu. Two sets of accumulators (units of
// even and odd index); a unit's rows are summed after the trip that holds its last column,
// which needs nb >= 7 or an even nb >= 4 (a trip then touches at most two units, and a unit
// is summed before the one after next starts; nb 5 fails). The host takes this for even
// nb >= 4 only (seg.rs flat_applies).
// GS: the weights in the gate/up streams of common.cuh (q4g_part; each trip's load
// instructions 512 contiguous bytes at constant offsets) instead of the file's layout; the
// same arithmetic in the same order, so the same bits. Measured on the H200
// (bench/runs/2026-12-01-h200-z z9): alone (tools/bench/mvbw/ilv.cu, DRAM-cold) 37.9-38.0 →
// 37.4-37.5 µs; in the token +0.9 % at depth 0, +0.7 % at 32,768. The same streams with a
// part of m blocks for the trip that crosses from gate into up instead of a padded tile (each
// offset a product with m) measured no faster than the file's layout (z8).
template <bool GS>
__device__ __forceinline__ void gu_swiglu_flat(const u8 *wg, const u8 *wu, int n_ff, float *h,
                                               const signed char *qa, const float *da,
                                               const float *sa, int n_in, signed char *qo,
                                               float *dout, float *so) {
    __shared__ float gu[64];
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32, lane = threadIdx.x & 31;
    const int nb = n_in >> 8, k = lane & 3, s = lane >> 2, sh = 16 * (k & 1);
    const bool upper = k >= 2;
    const size_t row_bytes = (size_t)nb * 144;
    const int total = GU_PASSES * nb;
    float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int done = 0;
    for (int g0 = 0; g0 < total; g0 += 8) {
        const int g = min(g0 + s, total - 1);
        const int i = g / nb, b = g - i * nb, u = i * 4 + warp;
        uint4 hd[4], q0[4], q1[4];
        if (GS) {
            // This trip's tile of the warp's stream in gate's or up's half (slot s: g = g0 + s).
            const int up = i >= 2;
            const u8 *tile = (up ? wu : wg) +
                             (size_t)(4 * blockIdx.x + warp) * Q4G_TILES(nb) * 4608 +
                             (size_t)((g0 >> 3) - Q4G_TRIP0(nb, up)) * 4608;
#pragma unroll
            for (int r = 0; r < 4; r++) {
                hd[r] = ld_w16(tile + 1152 * r + 16 * s);
                q0[r] = ld_w16(tile + 1152 * r + 128 + 16 * lane);
                q1[r] = ld_w16(tile + 1152 * r + 640 + 16 * lane);
            }
        } else {
            const u8 *w =
                (u < 8 ? wg : wu) + (size_t)(r0 + 4 * (u & 7)) * row_bytes + (size_t)b * 144;
#pragma unroll
            for (int r = 0; r < 4; r++) Q4K_LOAD(w + r * row_bytes, k, hd[r], q0[r], q1[r]);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
        const bool valid = g0 + s < total, odd = i & 1;
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const float t = q4k_term<true>(hd[r], q0[r], q1[r], x, sh, upper);
            if (valid && !odd) acc0[r] += t;
            if (valid && odd) acc1[r] += t;
        }
        // Units whose last column was in this trip: their rows are complete.
        done = flat_units_done<4, GU_PASSES>(done, nb, g0, acc0, acc1, [&](int u, int r, float v) {
            if (lane == 0) gu[4 * (u * 4 + warp) + r] = v;
        });
    }
    __syncthreads();
    gu_swiglu_store(gu, warp, r0, h, qo, dout, so);
}

extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu_flat(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
                       const float *da, const float *sa, int n_in, signed char *qo,
                       float *dout, float *so) {
    gu_swiglu_flat<false>(wg, wu, n_ff, h, qa, da, sa, n_in, qo, dout, so);
}

// mvq_gu_swiglu_flat with the tail prefetch (ONE_ENTRY_TP's; the FFN down projection's rows).
extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu_flat_tp(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
                          const float *da, const float *sa, int n_in, signed char *qo,
                          float *dout, float *so, PF_ARGS) {
    gu_swiglu_flat<false>(wg, wu, n_ff, h, qa, da, sa, n_in, qo, dout, so);
    prefetch_ranges(PF_PASS, blockIdx.x, gridDim.x);
}

// The two entries above over the gate/up streams (DecodeTuning::gate_up_streams).
extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu_flat_gs(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
                          const float *da, const float *sa, int n_in, signed char *qo,
                          float *dout, float *so) {
    gu_swiglu_flat<true>(wg, wu, n_ff, h, qa, da, sa, n_in, qo, dout, so);
}
extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu_flat_gs_tp(const u8 *wg, const u8 *wu, int n_ff, float *h,
                             const signed char *qa, const float *da, const float *sa, int n_in,
                             signed char *qo, float *dout, float *so, PF_ARGS) {
    gu_swiglu_flat<true>(wg, wu, n_ff, h, qa, da, sa, n_in, qo, dout, so);
    prefetch_ranges(PF_PASS, blockIdx.x, gridDim.x);
}

// Rewrites an n_ff × (256 nb) Q4_K matrix (file layout) into its half (`up`: 0 gate, 1 up) of
// the gate/up streams (common.cuh's q4g_part), one thread per block; `dst` holds
// q4g_bytes(n_ff, nb) bytes, zeroed. n_ff % 32 == 0, nb even and at least 4 (the host checks).
extern "C" __global__ void q4k_gu_streams(const u8 *src, u8 *dst, int n_ff, int nb, int up) {
    const unsigned long long n = (unsigned long long)n_ff * nb;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const int row = (int)(i / nb), b = (int)(i % nb);
        int slot;
        u8 *part = (u8 *)q4g_part(dst, nb, up, row, b, &slot);
        const uint4 *blk = (const uint4 *)(src + i * 144);
        *(uint4 *)(part + 16 * slot) = blk[0];
        for (int k = 0; k < 4; k++) {
            *(uint4 *)(part + 128 + 16 * (4 * slot + k)) = blk[1 + 2 * k];
            *(uint4 *)(part + 640 + 16 * (4 * slot + k)) = blk[2 + 2 * k];
        }
    }
}
