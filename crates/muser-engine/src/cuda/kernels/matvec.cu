// Quantized matrix × activation products with f32 activations (Q5_K, Q8_0, F16, BF16, F32;
// Q4_K and Q6_K use the int8-activation kernels of q8act.cu, one-token Q5_K mvq5.cu's), for
// decode and short batches.
//
// Layout: W is n_out ggml rows of n_in elements in the GGUF block format, as stored in the
// file; X is [n_tok, n_in] f32 row-major; Y is [n_tok, n_out] f32. One warp computes one
// output row for up to MAX_TOK tokens: each lane decodes a fixed slice of a block once and
// multiplies it with every token's activations, accumulating in f32; a warp shuffle reduces
// the lanes. `common.cuh` is prepended at compile time.
//
// Header-free on purpose (NVRTC without toolkit headers): f16 is converted with PTX cvt.

__device__ __forceinline__ float bf2f(u16 h) { return __uint_as_float(((u32)h) << 16); }

// Writes each token's sum for this warp's row.
template <int NT>
__device__ __forceinline__ void finish(const float *acc, int n_tok, float *y, int n_out, int row) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t < n_tok) {
            float s = warp_sum(acc[t]);
            if ((threadIdx.x & 31) == 0) y[(size_t)t * n_out + row] = s;
        }
    }
}

// Token loops are unrolled to NT with a guard so that `acc` stays in registers.
#define ROW_PROLOGUE(BLOCK_BYTES, BLOCK_ELEMS)                                   \
    const int lane = threadIdx.x & 31;                                           \
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);                     \
    if (row >= n_out) return;                                                    \
    const int nb = n_in / (BLOCK_ELEMS);                                         \
    const u8 *wrow = w + (size_t)row * nb * (BLOCK_BYTES);                       \
    float acc[NT];                                                          \
    _Pragma("unroll") for (int t = 0; t < NT; t++) acc[t] = 0.0f;

__device__ __forceinline__ float hsum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

// The four quants of bytes of `q` (low or high nibbles per `shift`), plus the high bit `bit`
// of the matching bytes of `h`, times four activations.
__device__ __forceinline__ float q5_dot(u32 q, int shift, u32 h, int bit, float4 a) {
    float r = 0.f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int v = ((q >> (8 * j + shift)) & 0xF) | (((h >> (8 * j + bit)) & 1) << 4);
        r += (float)v * (j == 0 ? a.x : j == 1 ? a.y : j == 2 ? a.z : a.w);
    }
    return r;
}

// Q5_K: 176-byte blocks: d, dmin, scales[12], qh[32], qs[128].
template <int NT>
__device__ __forceinline__ void mv_q5_k_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(176, 256)
    const int k = lane & 3;
    for (int b = lane >> 2; b < nb; b += 8) {
        const u8 *blk = wrow + (size_t)b * 176;
        const u32 dd = *(const u32 *)blk;
        const float d = h2f((u16)(dd & 0xFFFF)), dmin = h2f((u16)(dd >> 16));
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * k, blk + 4, &sc0, &m0);
        scale_min_k4(2 * k + 1, blk + 4, &sc1, &m1);
        const uint4 *hv = (const uint4 *)(blk + 16);
        const uint4 *qv = (const uint4 *)(blk + 48 + 32 * k);
        const uint4 ha = hv[0], hb = hv[1], qa = qv[0], qb = qv[1];
        const u32 h[8] = {ha.x, ha.y, ha.z, ha.w, hb.x, hb.y, hb.z, hb.w};
        const u32 q[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
        const float d0 = d * sc0, d1 = d * sc1, m0f = dmin * m0, m1f = dmin * m1;
        FOR_TOKENS {
            const float4 *xa = (const float4 *)(x + (size_t)t * n_in + b * 256 + 64 * k);
            float s0 = 0.f, s1 = 0.f, x0 = 0.f, x1 = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float4 a = xa[i], c = xa[i + 8];
                s0 += q5_dot(q[i], 0, h[i], 2 * k, a);
                s1 += q5_dot(q[i], 4, h[i], 2 * k + 1, c);
                x0 += hsum4(a);
                x1 += hsum4(c);
            }
            acc[t] += d0 * s0 - m0f * x0 + d1 * s1 - m1f * x1;
        }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
}

// Q8_0: 34-byte blocks (2-byte aligned) of 32: d (f16), 32 int8. Lane = (block slot 0..7,
// quarter 0..3 of 8 quants).
template <int NT>
__device__ __forceinline__ void mv_q8_0_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(34, 32)
    const int part = lane & 3;
    for (int b = lane >> 2; b < nb; b += 8) {
        const u8 *blk = wrow + (size_t)b * 34;
        const float d = h2f(*(const u16 *)blk);
        const u16 *q2 = (const u16 *)(blk + 2 + 8 * part);
        float q[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const u16 v = q2[j];
            q[2 * j] = (float)(signed char)(v & 0xFF);
            q[2 * j + 1] = (float)(signed char)(v >> 8);
        }
        FOR_TOKENS {
            const float4 *xa = (const float4 *)(x + (size_t)t * n_in + b * 32 + 8 * part);
            const float4 a = xa[0], c = xa[1];
            acc[t] += d * (q[0] * a.x + q[1] * a.y + q[2] * a.z + q[3] * a.w + q[4] * c.x +
                           q[5] * c.y + q[6] * c.z + q[7] * c.w);
        }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
}

// f16 or bf16 weights (BF selects the conversion): each lane takes 8 consecutive elements
// (one 16-byte load).
template <bool BF>
__device__ __forceinline__ float half_to_f32(u16 h) { return BF ? bf2f(h) : h2f(h); }

template <int NT, bool BF>
__device__ __forceinline__ void mv_half_body(const u8 *w, const float *x, float *y, int n_in,
                                             int n_out, int n_tok) {
    ROW_PROLOGUE(2, 1)
    // 16-byte loads need rows that start 16-byte aligned (n_in a multiple of 8).
    const int n_vec = (n_in & 7) == 0 ? n_in : 0;
    for (int i = 8 * lane; i + 8 <= n_vec; i += 256) {
        const uint4 v = *(const uint4 *)(wrow + 2 * (size_t)i);
        const u32 p[4] = {v.x, v.y, v.z, v.w};
        float f[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            f[2 * j] = half_to_f32<BF>((u16)(p[j] & 0xFFFF));
            f[2 * j + 1] = half_to_f32<BF>((u16)(p[j] >> 16));
        }
        FOR_TOKENS {
            const float *xb = x + (size_t)t * n_in + i;
            float s = 0.f;
#pragma unroll
            for (int j = 0; j < 8; j++) s += f[j] * xb[j];
            acc[t] += s;
        }
    }
    // Rows not a multiple of 8 wide take this scalar loop.
    for (int i = n_vec + lane; i < n_in; i += 32) {
        const float v = half_to_f32<BF>(((const u16 *)wrow)[i]);
        FOR_TOKENS { acc[t] += v * x[(size_t)t * n_in + i]; }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
}

template <int NT>
__device__ __forceinline__ void mv_f16_body(const u8 *w, const float *x, float *y, int n_in,
                                            int n_out, int n_tok) {
    mv_half_body<NT, false>(w, x, y, n_in, n_out, n_tok);
}

template <int NT>
__device__ __forceinline__ void mv_bf16_body(const u8 *w, const float *x, float *y, int n_in,
                                             int n_out, int n_tok) {
    mv_half_body<NT, true>(w, x, y, n_in, n_out, n_tok);
}

template <int NT>
__device__ __forceinline__ void mv_f32_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                  int n_tok) {
    ROW_PROLOGUE(4, 1)
    const float *wr = (const float *)wrow;
    for (int i = lane; i < n_in; i += 32) {
        const float v = wr[i];
        FOR_TOKENS { acc[t] += v * x[(size_t)t * n_in + i]; }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
}

// One token (decode), Q8_0 and f16/bf16. The bodies above keep one loop trip's loads in
// flight per warp, which held f16/bf16 to 1.9 TB/s on the H200 (bench/runs/2026-11-30-h200):
// these issue several trips' weight loads before using them. Q8_0 is bound by L1 instead
// (f32 activations are 4 bytes a weight byte; unrolled alone it stayed at 2.1 TB/s,
// bench/runs/2026-12-03-h200-l l1): mv_q8_0_one4 takes 4 rows a warp, so that each lane's
// activations serve four rows, and turns the quants into floats without I2F (q8_pair). The
// same products, summed in another order (f32 throughout).
// Two signed bytes (v's low and high) as floats, exactly: each byte + 128 (the XOR) placed
// as the low mantissa byte of 2^23 (prmt), minus 2^23 + 128.
__device__ __forceinline__ float2 q8_pair(u16 v) {
    const u32 t = (u32)v ^ 0x8080u;
    return make_float2(__uint_as_float(__byte_perm(t, 0x4B000000u, 0x7440)) - 8388736.0f,
                       __uint_as_float(__byte_perm(t, 0x4B000000u, 0x7441)) - 8388736.0f);
}

// Q8_0: rows row0 .. row0 + 3 of each warp; lane = (block slot 0..7, quarter 0..3 of 8
// quants) as mv_q8_0_body, 16 blocks a trip (two of 8), each row's loads issued first.
__device__ __forceinline__ void mv_q8_0_one4(const u8 *w, const float *x, float *y, int n_in,
                                             int n_out) {
    const int lane = threadIdx.x & 31;
    const int row0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * 4;
    if (row0 >= n_out) return;
    const int nb = n_in / 32, part = lane & 3, s = lane >> 2;
    const size_t row_bytes = (size_t)nb * 34;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int b0 = 0; b0 < nb; b0 += 16) {
        u16 dq[2][4], qv[2][4][4];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            // Past the row's end: the last block again (loaded, never used); rows past n_out
            // read the last row.
            const int b = min(b0 + s + 8 * u, nb - 1);
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 34;
                dq[u][r] = *(const u16 *)blk;
                const u16 *q2 = (const u16 *)(blk + 2 + 8 * part);
#pragma unroll
                for (int j = 0; j < 4; j++) qv[u][r][j] = q2[j];
            }
        }
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int b = b0 + s + 8 * u;
            if (b >= nb) continue;
            const float4 *xa = (const float4 *)(x + (size_t)b * 32 + 8 * part);
            const float4 a = xa[0], c = xa[1];
            const float xs[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
            for (int r = 0; r < 4; r++) {
                float t = 0.0f;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float2 q = q8_pair(qv[u][r][j]);
                    t = fmaf(q.x, xs[2 * j], t);
                    t = fmaf(q.y, xs[2 * j + 1], t);
                }
                acc[r] = fmaf(h2f(dq[u][r]), t, acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const float t = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[row0 + r] = t;
    }
}

// Q8_0 rows of a multiple of 16 blocks (544 bytes, 34 16-byte words: rows of a multiple of
// 8 blocks start 16-byte aligned), 4 rows a warp: each trip's 4 x 544 bytes loaded as
// 16-byte words into the warp's shared memory (the next trip's issued before this one is
// used), then read there as mv_q8_0_one4 reads global memory (2-byte loads of 34-byte blocks,
// which held that kernel to 2.1 TB/s). Other rows: mv_q8_0_one4.
#define Q8S_WORDS 136
__device__ __forceinline__ void q8s_load(const u8 *w, size_t row_bytes, int row0, int n_out,
                                         int t, uint4 *g) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int m = 0; m < 5; m++) {
        const int i = lane + 32 * m, r = i / 34, j = i - 34 * r;
        if (i < Q8S_WORDS)
            g[m] = ((const uint4 *)(w + (size_t)min(row0 + r, n_out - 1) * row_bytes +
                                    (size_t)t * 544))[j];
    }
}

__device__ __forceinline__ void mv_q8_0_staged(const u8 *w, const float *x, float *y, int n_in,
                                           int n_out) {
    __shared__ uint4 stage[WARPS][Q8S_WORDS];
    const int nb = n_in / 32;
    if (nb % 16 != 0) {
        mv_q8_0_one4(w, x, y, n_in, n_out);
        return;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * WARPS + warp) * 4;
    if (row0 >= n_out) return;
    const int part = lane & 3, s = lane >> 2, trips = nb / 16;
    const size_t row_bytes = (size_t)nb * 34;
    uint4 *st = stage[warp];
    const u8 *st8 = (const u8 *)st;
    uint4 g[5];
    q8s_load(w, row_bytes, row0, n_out, 0, g);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int t = 0; t < trips; t++) {
        __syncwarp();
#pragma unroll
        for (int m = 0; m < 5; m++)
            if (lane + 32 * m < Q8S_WORDS) st[lane + 32 * m] = g[m];
        __syncwarp();
        if (t + 1 < trips) q8s_load(w, row_bytes, row0, n_out, t + 1, g);
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int bb = s + 8 * u, b = 16 * t + bb;
            const float4 *xa = (const float4 *)(x + (size_t)b * 32 + 8 * part);
            const float4 a = xa[0], c = xa[1];
            const float xs[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const u8 *blk = st8 + r * 544 + bb * 34;
                const u16 *q2 = (const u16 *)(blk + 2 + 8 * part);
                float tt = 0.0f;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float2 q = q8_pair(q2[j]);
                    tt = fmaf(q.x, xs[2 * j], tt);
                    tt = fmaf(q.y, xs[2 * j + 1], tt);
                }
                acc[r] = fmaf(h2f(*(const u16 *)blk), tt, acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const float v = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[row0 + r] = v;
    }
}

// f16/bf16: lane i of a trip takes 8 consecutive elements (one 16-byte load) at 8 (i + 32 u),
// u = 0..3; rows not a multiple of 8 wide take mv_half_body.
template <bool BF>
__device__ __forceinline__ void mv_half_one(const u8 *w, const float *x, float *y, int n_in,
                                            int n_out) {
    if ((n_in & 7) != 0) {
        mv_half_body<1, BF>(w, x, y, n_in, n_out, 1);
        return;
    }
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= n_out) return;
    const int nv = n_in >> 3;
    const uint4 *wr = (const uint4 *)(w + (size_t)row * n_in * 2);
    float acc = 0.0f;
    for (int i0 = 0; i0 < nv; i0 += 128) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = wr[min(i0 + lane + 32 * u, nv - 1)];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = i0 + lane + 32 * u;
            if (i >= nv) continue;
            const u32 p[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
            const float4 *xb = (const float4 *)(x + 8 * (size_t)i);
            const float4 a = xb[0], c = xb[1];
            const float xs[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
            float s = 0.f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                s += half_to_f32<BF>((u16)(p[j] & 0xFFFF)) * xs[2 * j];
                s += half_to_f32<BF>((u16)(p[j] >> 16)) * xs[2 * j + 1];
            }
            acc += s;
        }
    }
    const float t = warp_sum(acc);
    if (lane == 0) y[row] = t;
}

// Entry points: `NAME` handles up to MAX_TOK tokens per launch, `NAME_t1` one token (decode),
// with a single accumulator per row so that more warps fit on each multiprocessor (through
// ONE(w, x, y, n_in, n_out) where given).
#define ENTRY_ONE(NAME, ONE)                                                                 \
    extern "C" __global__ void NAME(const u8 *w, const float *x, float *y, int n_in,         \
                                     int n_out, int n_tok) {                                \
        NAME##_body<MAX_TOK>(w, x, y, n_in, n_out, n_tok);                                   \
    }                                                                                        \
    extern "C" __global__ void NAME##_t1(const u8 *w, const float *x, float *y, int n_in,    \
                                         int n_out, int n_tok) {                            \
        ONE(w, x, y, n_in, n_out);                                                           \
    }
__device__ __forceinline__ void mv_q5_k_one(const u8 *w, const float *x, float *y, int n_in,
                                            int n_out) {
    mv_q5_k_body<1>(w, x, y, n_in, n_out, 1);
}
__device__ __forceinline__ void mv_f32_one(const u8 *w, const float *x, float *y, int n_in,
                                           int n_out) {
    mv_f32_body<1>(w, x, y, n_in, n_out, 1);
}
ENTRY_ONE(mv_q5_k, mv_q5_k_one)
ENTRY_ONE(mv_q8_0, mv_q8_0_staged)
ENTRY_ONE(mv_f16, mv_half_one<false>)
ENTRY_ONE(mv_bf16, mv_half_one<true>)
ENTRY_ONE(mv_f32, mv_f32_one)
