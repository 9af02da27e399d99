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
__device__ __forceinline__ void finish(float *acc, int n_tok, float *y, int n_out, int row) {
    for (int t = 0; t < n_tok; t++) {
        float s = warp_sum(acc[t]);
        if ((threadIdx.x & 31) == 0) y[(size_t)t * n_out + row] = s;
    }
}

#define ROW_PROLOGUE(BLOCK_BYTES, BLOCK_ELEMS)                                   \
    const int lane = threadIdx.x & 31;                                           \
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);                     \
    if (row >= n_out) return;                                                    \
    const int nb = n_in / (BLOCK_ELEMS);                                         \
    const u8 *wrow = w + (size_t)row * nb * (BLOCK_BYTES);                       \
    float acc[MAX_TOK];                                                          \
    for (int t = 0; t < MAX_TOK; t++) acc[t] = 0.0f;

// Q4_K: 144-byte blocks of 256. Lane = (block slot 0..7, pair k 0..3): 64 elements.
extern "C" __global__ void mv_q4_k(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(144, 256)
    const int k = lane & 3;
    for (int b = lane >> 2; b < nb; b += 8) {
        const u8 *blk = wrow + (size_t)b * 144;
        const float d = h2f(ld16(blk)), dmin = h2f(ld16(blk + 2));
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * k, blk + 4, &sc0, &m0);
        scale_min_k4(2 * k + 1, blk + 4, &sc1, &m1);
        const uint4 *qv = (const uint4 *)(blk + 16 + 32 * k);
        uint4 q01[2] = {qv[0], qv[1]};
        const u8 *qs = (const u8 *)q01;
        const float d0 = d * sc0, d1 = d * sc1, m0f = dmin * m0, m1f = dmin * m1;
        for (int t = 0; t < n_tok; t++) {
            const float *xb = x + (size_t)t * n_in + b * 256 + 64 * k;
            float s0 = 0.f, s1 = 0.f, x0 = 0.f, x1 = 0.f;
            for (int i = 0; i < 32; i++) {
                float a = xb[i], c = xb[i + 32];
                s0 += (float)(qs[i] & 0xF) * a;
                s1 += (float)(qs[i] >> 4) * c;
                x0 += a;
                x1 += c;
            }
            acc[t] += d0 * s0 - m0f * x0 + d1 * s1 - m1f * x1;
        }
    }
    finish(acc, n_tok, y, n_out, row);
}

// Q5_K: 176-byte blocks: d, dmin, scales[12], qh[32], qs[128].
extern "C" __global__ void mv_q5_k(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(176, 256)
    const int k = lane & 3;
    for (int b = lane >> 2; b < nb; b += 8) {
        const u8 *blk = wrow + (size_t)b * 176;
        const float d = h2f(ld16(blk)), dmin = h2f(ld16(blk + 2));
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * k, blk + 4, &sc0, &m0);
        scale_min_k4(2 * k + 1, blk + 4, &sc1, &m1);
        const uint4 *hv = (const uint4 *)(blk + 16);
        const uint4 *qv = (const uint4 *)(blk + 48 + 32 * k);
        uint4 h01[2] = {hv[0], hv[1]};
        uint4 q01[2] = {qv[0], qv[1]};
        const u8 *qh = (const u8 *)h01;
        const u8 *qs = (const u8 *)q01;
        const float d0 = d * sc0, d1 = d * sc1, m0f = dmin * m0, m1f = dmin * m1;
        for (int t = 0; t < n_tok; t++) {
            const float *xb = x + (size_t)t * n_in + b * 256 + 64 * k;
            float s0 = 0.f, s1 = 0.f, x0 = 0.f, x1 = 0.f;
            for (int i = 0; i < 32; i++) {
                float a = xb[i], c = xb[i + 32];
                int q0 = (qs[i] & 0xF) | (((qh[i] >> (2 * k)) & 1) << 4);
                int q1 = (qs[i] >> 4) | (((qh[i] >> (2 * k + 1)) & 1) << 4);
                s0 += (float)q0 * a;
                s1 += (float)q1 * c;
                x0 += a;
                x1 += c;
            }
            acc[t] += d0 * s0 - m0f * x0 + d1 * s1 - m1f * x1;
        }
    }
    finish(acc, n_tok, y, n_out, row);
}

// Q6_K: 210-byte blocks: ql[128], qh[64], scales[16] (int8), d. Lane = (block slot 0..3,
// half h 0..1, quarter r 0..3): l = 8r..8r+8 of half h, four elements per l.
extern "C" __global__ void mv_q6_k(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(210, 256)
    const int h = (lane >> 2) & 1, r = lane & 3;
    for (int b = lane >> 3; b < nb; b += 4) {
        const u8 *blk = wrow + (size_t)b * 210;
        const float d = h2f(ld16(blk + 208));
        const signed char *sc = (const signed char *)(blk + 192);
        const u8 *ql = blk + 64 * h;
        const u8 *qh = blk + 128 + 32 * h;
        const int is = (8 * r) / 16;
        const float d1 = d * sc[8 * h + is], d2 = d * sc[8 * h + is + 2];
        const float d3 = d * sc[8 * h + is + 4], d4 = d * sc[8 * h + is + 6];
        int q1[8], q2[8], q3[8], q4[8];
        for (int j = 0; j < 8; j++) {
            int l = 8 * r + j;
            u8 a = ql[l], c = ql[l + 32], hb = qh[l];
            q1[j] = (int)((a & 0xF) | ((hb & 3) << 4)) - 32;
            q2[j] = (int)((c & 0xF) | (((hb >> 2) & 3) << 4)) - 32;
            q3[j] = (int)((a >> 4) | (((hb >> 4) & 3) << 4)) - 32;
            q4[j] = (int)((c >> 4) | (((hb >> 6) & 3) << 4)) - 32;
        }
        for (int t = 0; t < n_tok; t++) {
            const float *xb = x + (size_t)t * n_in + b * 256 + 128 * h + 8 * r;
            float s1 = 0.f, s2 = 0.f, s3 = 0.f, s4 = 0.f;
            for (int j = 0; j < 8; j++) {
                s1 += (float)q1[j] * xb[j];
                s2 += (float)q2[j] * xb[j + 32];
                s3 += (float)q3[j] * xb[j + 64];
                s4 += (float)q4[j] * xb[j + 96];
            }
            acc[t] += d1 * s1 + d2 * s2 + d3 * s3 + d4 * s4;
        }
    }
    finish(acc, n_tok, y, n_out, row);
}

// Q8_0: 34-byte blocks of 32: d (f16), 32 int8. Lane = block slot (32 blocks per step).
extern "C" __global__ void mv_q8_0(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(34, 32)
    for (int b = lane; b < nb; b += 32) {
        const u8 *blk = wrow + (size_t)b * 34;
        const float d = h2f(ld16(blk));
        const signed char *q = (const signed char *)(blk + 2);
        for (int t = 0; t < n_tok; t++) {
            const float *xb = x + (size_t)t * n_in + b * 32;
            float s = 0.f;
            for (int i = 0; i < 32; i++) s += (float)q[i] * xb[i];
            acc[t] += d * s;
        }
    }
    finish(acc, n_tok, y, n_out, row);
}

// Plain types: lane-strided pairs of elements.
extern "C" __global__ void mv_f16(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                  int n_tok) {
    ROW_PROLOGUE(2, 1)
    const u16 *wr = (const u16 *)wrow;
    for (int i = lane; i < n_in; i += 32) {
        float v = h2f(wr[i]);
        for (int t = 0; t < n_tok; t++) acc[t] += v * x[(size_t)t * n_in + i];
    }
    finish(acc, n_tok, y, n_out, row);
}

extern "C" __global__ void mv_bf16(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                   int n_tok) {
    ROW_PROLOGUE(2, 1)
    const u16 *wr = (const u16 *)wrow;
    for (int i = lane; i < n_in; i += 32) {
        float v = bf2f(wr[i]);
        for (int t = 0; t < n_tok; t++) acc[t] += v * x[(size_t)t * n_in + i];
    }
    finish(acc, n_tok, y, n_out, row);
}

extern "C" __global__ void mv_f32(const u8 *w, const float *x, float *y, int n_in, int n_out,
                                  int n_tok) {
    ROW_PROLOGUE(4, 1)
    const float *wr = (const float *)wrow;
    for (int i = lane; i < n_in; i += 32) {
        float v = wr[i];
        for (int t = 0; t < n_tok; t++) acc[t] += v * x[(size_t)t * n_in + i];
    }
    finish(acc, n_tok, y, n_out, row);
}
