// Quantized matrix × activation products for decode and short batches.
//
// Layout: W is n_out ggml rows of n_in elements in the GGUF block format, as stored in the
// file; X is [n_tok, n_in] f32 row-major; Y is [n_tok, n_out] f32. Activations stay f32 (no
// rounding: the CUDA path is held to the exact oracle). One warp computes one output row for
// up to MAX_TOK tokens: each lane decodes a fixed slice of a block once and multiplies it with
// every token's activations, accumulating in f32; a warp shuffle reduces the lanes.
//
// Header-free on purpose (NVRTC without toolkit headers): f16 is converted with PTX cvt.

#define WARPS 4
#define MAX_TOK 8

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float bf2f(u16 h) { return __uint_as_float(((u32)h) << 16); }

__device__ __forceinline__ u16 ld16(const u8 *p) { return (u16)p[0] | ((u16)p[1] << 8); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j (0..8) of a Q4_K/Q5_K block.
__device__ __forceinline__ void scale_min_k4(int j, const u8 *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

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

#define FOR_TOKENS _Pragma("unroll") for (int t = 0; t < NT; t++) if (t < n_tok)

__device__ __forceinline__ float nib_dot(u32 q, int shift, float4 a) {
    return (float)((q >> shift) & 0xF) * a.x + (float)((q >> (shift + 8)) & 0xF) * a.y +
           (float)((q >> (shift + 16)) & 0xF) * a.z + (float)((q >> (shift + 24)) & 0xF) * a.w;
}

__device__ __forceinline__ float hsum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

// Multi-row kernels: one warp computes R consecutive rows, so every activation value loaded
// is used R times (loading x dominated the one-row-per-warp version: 7 bytes of activations
// per byte of Q4_K weights).
#define R 4

#define MULTI_ROW_PROLOGUE(BLOCK_BYTES)                                          \
    const int lane = threadIdx.x & 31;                                           \
    const int row0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * R;              \
    if (row0 >= n_out) return;                                                   \
    const int nb = n_in / 256;                                                   \
    const size_t row_bytes = (size_t)nb * (BLOCK_BYTES);                         \
    float acc[R][NT];                                                       \
    _Pragma("unroll") for (int r = 0; r < R; r++)                                \
        _Pragma("unroll") for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;

template <int NT>
__device__ __forceinline__ void finish_rows(float (*acc)[NT], int n_tok, float *y, int n_out,
                                            int row0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t < n_tok) {
                float s = warp_sum(acc[r][t]);
                if ((threadIdx.x & 31) == 0 && row0 + r < n_out) y[(size_t)t * n_out + row0 + r] = s;
            }
        }
    }
}

// Q4_K: 144-byte blocks of 256. Lane = (block slot 0..7, pair k 0..3): 64 elements of each of
// the warp's R rows; the 32 quant bytes per row are loaded as two 16-byte vectors.
template <int NT>
__device__ __forceinline__ void mv_q4_k_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    MULTI_ROW_PROLOGUE(144)
    const int k = lane & 3;
    for (int b = lane >> 2; b < nb; b += 8) {
        u32 q[R][8];
        float d0[R], d1[R], m0f[R], m1f[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int rr = min(row0 + r, n_out - 1);
            const u8 *blk = w + (size_t)rr * row_bytes + (size_t)b * 144;
            const u32 dd = *(const u32 *)blk;
            const float d = h2f((u16)(dd & 0xFFFF)), dmin = h2f((u16)(dd >> 16));
            int sc0, m0, sc1, m1;
            scale_min_k4(2 * k, blk + 4, &sc0, &m0);
            scale_min_k4(2 * k + 1, blk + 4, &sc1, &m1);
            const uint4 *qv = (const uint4 *)(blk + 16 + 32 * k);
            const uint4 qa = qv[0], qb = qv[1];
            q[r][0] = qa.x; q[r][1] = qa.y; q[r][2] = qa.z; q[r][3] = qa.w;
            q[r][4] = qb.x; q[r][5] = qb.y; q[r][6] = qb.z; q[r][7] = qb.w;
            d0[r] = d * sc0; d1[r] = d * sc1; m0f[r] = dmin * m0; m1f[r] = dmin * m1;
        }
        FOR_TOKENS {
            const float4 *xa = (const float4 *)(x + (size_t)t * n_in + b * 256 + 64 * k);
            float s0[R], s1[R];
#pragma unroll
            for (int r = 0; r < R; r++) { s0[r] = 0.f; s1[r] = 0.f; }
            float x0 = 0.f, x1 = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float4 a = xa[i], c = xa[i + 8];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    s0[r] += nib_dot(q[r][i], 0, a);
                    s1[r] += nib_dot(q[r][i], 4, c);
                }
                x0 += hsum4(a);
                x1 += hsum4(c);
            }
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r][t] += d0[r] * s0[r] - m0f[r] * x0 + d1[r] * s1[r] - m1f[r] * x1;
        }
    }
    finish_rows<NT>(acc, n_tok, y, n_out, row0);
}

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

// Q6_K: 210-byte blocks (2-byte aligned): ql[128], qh[64], scales[16] (int8), d. Lane =
// (block slot 0..3, half h 0..1, quarter r 0..3): l = 8r..8r+8 of half h, four quants per l,
// for each of the warp's R rows.
template <int NT>
__device__ __forceinline__ void mv_q6_k_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    MULTI_ROW_PROLOGUE(210)
    const int h = (lane >> 2) & 1, qr = lane & 3;
    for (int b = lane >> 3; b < nb; b += 4) {
        float q1[R][8], q2[R][8], q3[R][8], q4[R][8];
        float d1[R], d2[R], d3[R], d4[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int rr = min(row0 + r, n_out - 1);
            const u8 *blk = w + (size_t)rr * row_bytes + (size_t)b * 210;
            const float d = h2f(*(const u16 *)(blk + 208));
            const signed char *sc = (const signed char *)(blk + 192);
            const u16 *ql = (const u16 *)(blk + 64 * h + 8 * qr);
            const u16 *qc = (const u16 *)(blk + 64 * h + 32 + 8 * qr);
            const u16 *qh = (const u16 *)(blk + 128 + 32 * h + 8 * qr);
            const int is = qr / 2;
            d1[r] = d * sc[8 * h + is];
            d2[r] = d * sc[8 * h + is + 2];
            d3[r] = d * sc[8 * h + is + 4];
            d4[r] = d * sc[8 * h + is + 6];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const u16 a2 = ql[j], c2 = qc[j], h2 = qh[j];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const u32 a = (a2 >> (8 * e)) & 0xFF, c = (c2 >> (8 * e)) & 0xFF;
                    const u32 hb = (h2 >> (8 * e)) & 0xFF;
                    q1[r][2 * j + e] = (float)((int)((a & 0xF) | ((hb & 3) << 4)) - 32);
                    q2[r][2 * j + e] = (float)((int)((c & 0xF) | (((hb >> 2) & 3) << 4)) - 32);
                    q3[r][2 * j + e] = (float)((int)((a >> 4) | (((hb >> 4) & 3) << 4)) - 32);
                    q4[r][2 * j + e] = (float)((int)((c >> 4) | (((hb >> 6) & 3) << 4)) - 32);
                }
            }
        }
        FOR_TOKENS {
            const float4 *xb = (const float4 *)(x + (size_t)t * n_in + b * 256 + 128 * h + 8 * qr);
            float s1[R], s2[R], s3[R], s4[R];
#pragma unroll
            for (int r = 0; r < R; r++) { s1[r] = 0.f; s2[r] = 0.f; s3[r] = 0.f; s4[r] = 0.f; }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float4 a = xb[j], c = xb[j + 8], e = xb[j + 16], g = xb[j + 24];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    s1[r] += q1[r][4 * j] * a.x + q1[r][4 * j + 1] * a.y + q1[r][4 * j + 2] * a.z + q1[r][4 * j + 3] * a.w;
                    s2[r] += q2[r][4 * j] * c.x + q2[r][4 * j + 1] * c.y + q2[r][4 * j + 2] * c.z + q2[r][4 * j + 3] * c.w;
                    s3[r] += q3[r][4 * j] * e.x + q3[r][4 * j + 1] * e.y + q3[r][4 * j + 2] * e.z + q3[r][4 * j + 3] * e.w;
                    s4[r] += q4[r][4 * j] * g.x + q4[r][4 * j + 1] * g.y + q4[r][4 * j + 2] * g.z + q4[r][4 * j + 3] * g.w;
                }
            }
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r][t] += d1[r] * s1[r] + d2[r] * s2[r] + d3[r] * s3[r] + d4[r] * s4[r];
        }
    }
    finish_rows<NT>(acc, n_tok, y, n_out, row0);
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

// Plain types: each lane takes 8 consecutive elements (one 16-byte load of f16/bf16).
template <int NT>
__device__ __forceinline__ void mv_f16_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                  int n_tok) {
    ROW_PROLOGUE(2, 1)
    // 16-byte loads need rows that start 16-byte aligned (n_in a multiple of 8).
    const int n_vec = (n_in & 7) == 0 ? n_in : 0;
    for (int i = 8 * lane; i + 8 <= n_vec; i += 256) {
        const uint4 v = *(const uint4 *)(wrow + 2 * (size_t)i);
        const u32 p[4] = {v.x, v.y, v.z, v.w};
        float f[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            f[2 * j] = h2f((u16)(p[j] & 0xFFFF));
            f[2 * j + 1] = h2f((u16)(p[j] >> 16));
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
        const float v = h2f(((const u16 *)wrow)[i]);
        FOR_TOKENS { acc[t] += v * x[(size_t)t * n_in + i]; }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
}

template <int NT>
__device__ __forceinline__ void mv_bf16_body(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(2, 1)
    // 16-byte loads need rows that start 16-byte aligned (n_in a multiple of 8).
    const int n_vec = (n_in & 7) == 0 ? n_in : 0;
    for (int i = 8 * lane; i + 8 <= n_vec; i += 256) {
        const uint4 v = *(const uint4 *)(wrow + 2 * (size_t)i);
        const u32 p[4] = {v.x, v.y, v.z, v.w};
        float f[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            f[2 * j] = bf2f((u16)(p[j] & 0xFFFF));
            f[2 * j + 1] = bf2f((u16)(p[j] >> 16));
        }
        FOR_TOKENS {
            const float *xb = x + (size_t)t * n_in + i;
            float s = 0.f;
#pragma unroll
            for (int j = 0; j < 8; j++) s += f[j] * xb[j];
            acc[t] += s;
        }
    }
    for (int i = n_vec + lane; i < n_in; i += 32) {
        const float v = bf2f(((const u16 *)wrow)[i]);
        FOR_TOKENS { acc[t] += v * x[(size_t)t * n_in + i]; }
    }
    finish<NT>(acc, n_tok, y, n_out, row);
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

// Entry points: `NAME` handles up to MAX_TOK tokens per launch, `NAME_t1` one token (decode),
// with a single accumulator per row so that more warps fit on each multiprocessor.
#define ENTRY(NAME)                                                                          \
    extern "C" __global__ void NAME(const u8 *w, const float *x, float *y, int n_in,         \
                                     int n_out, int n_tok) {                                \
        NAME##_body<MAX_TOK>(w, x, y, n_in, n_out, n_tok);                                   \
    }                                                                                        \
    extern "C" __global__ void NAME##_t1(const u8 *w, const float *x, float *y, int n_in,    \
                                         int n_out, int n_tok) {                            \
        NAME##_body<1>(w, x, y, n_in, n_out, 1);                                             \
    }
ENTRY(mv_q4_k)
ENTRY(mv_q5_k)
ENTRY(mv_q6_k)
ENTRY(mv_q8_0)
ENTRY(mv_f16)
ENTRY(mv_bf16)
ENTRY(mv_f32)
