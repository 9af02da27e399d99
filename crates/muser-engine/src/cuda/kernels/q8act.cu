// Activation quantization and dp4a matrix × vector kernels for the k-quants.
//
// The activation row is quantized once per launch group to int8 in blocks of 32 (scale
// d = max|x| / 127, round to nearest), each block keeping d × Σq (its quantized sum) for the
// k-quant min terms. The weight quants are then multiplied four at a time with __dp4a, which
// lifts Q4_K off the arithmetic limit that f32 activations hit (1.4 → 2.0 TB/s measured on an
// H200). Finer than ggml's Q8_K activation blocks (256), so at least as close to the exact
// oracle as the CPU fast path.
//
// Activation layout: qa int8 [n_tok][n_in]; da, sa f32 [n_tok][n_in / 32]. `common.cuh` is
// prepended at compile time.

// One warp per 32-element block: lane i quantizes x[i].
extern "C" __global__ void quantize_q8_32(const float *x, signed char *qa, float *da, float *sa,
                                          int n_blocks) {
    const int blk = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (blk >= n_blocks) return;
    quant_block32(x[(size_t)blk * 32 + (threadIdx.x & 31)], blk, qa, da, sa);
}

#define PROLOGUE(BLOCK_BYTES)                                                    \
    const int lane = threadIdx.x & 31;                                           \
    const int row0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * R;              \
    if (row0 >= n_out) return;                                                   \
    const int nb = n_in / 256;                                                   \
    const size_t row_bytes = (size_t)nb * (BLOCK_BYTES);                         \
    const int n_sub = n_in / 32;                                                 \
    float acc[R][NT];                                                            \
    _Pragma("unroll") for (int r = 0; r < R; r++)                                \
        _Pragma("unroll") for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;

// Q4_K × int8 activations. Lane = (block slot 0..7, pair k 0..3) as in matvec.cu.
template <int NT>
__device__ __forceinline__ void q4k_body(const u8 *w, const signed char *qa, const float *da,
                                         const float *sa, float *y, int n_in, int n_out,
                                         int n_tok) {
    PROLOGUE(144)
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
            const uint4 qa4 = qv[0], qb4 = qv[1];
            q[r][0] = qa4.x; q[r][1] = qa4.y; q[r][2] = qa4.z; q[r][3] = qa4.w;
            q[r][4] = qb4.x; q[r][5] = qb4.y; q[r][6] = qb4.z; q[r][7] = qb4.w;
            d0[r] = d * sc0; d1[r] = d * sc1; m0f[r] = dmin * m0; m1f[r] = dmin * m1;
        }
        const int s0i = b * 8 + 2 * k;  // activation sub-blocks of this lane
        FOR_TOKENS {
            const uint4 *av = (const uint4 *)(qa + (size_t)t * n_in + (size_t)s0i * 32);
            const uint4 a0 = av[0], a1 = av[1], c0 = av[2], c1 = av[3];
            const int a[8] = {(int)a0.x, (int)a0.y, (int)a0.z, (int)a0.w,
                              (int)a1.x, (int)a1.y, (int)a1.z, (int)a1.w};
            const int c[8] = {(int)c0.x, (int)c0.y, (int)c0.z, (int)c0.w,
                              (int)c1.x, (int)c1.y, (int)c1.z, (int)c1.w};
            const float dx0 = da[(size_t)t * n_sub + s0i], dx1 = da[(size_t)t * n_sub + s0i + 1];
            const float sx0 = sa[(size_t)t * n_sub + s0i], sx1 = sa[(size_t)t * n_sub + s0i + 1];
#pragma unroll
            for (int r = 0; r < R; r++) {
                int i0 = 0, i1 = 0;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    i0 = __dp4a((int)(q[r][j] & 0x0F0F0F0Fu), a[j], i0);
                    i1 = __dp4a((int)((q[r][j] >> 4) & 0x0F0F0F0Fu), c[j], i1);
                }
                acc[r][t] += d0[r] * dx0 * (float)i0 - m0f[r] * sx0 + d1[r] * dx1 * (float)i1 -
                             m1f[r] * sx1;
            }
        }
    }
    finish_rows<NT>(acc, n_tok, y, n_out, row0);
}

// Q6_K × int8 activations. Lane = (block slot 0..3, half h, quarter qr) as in matvec.cu.
template <int NT>
__device__ __forceinline__ void q6k_body(const u8 *w, const signed char *qa, const float *da,
                                         const float *sa, float *y, int n_in, int n_out,
                                         int n_tok) {
    PROLOGUE(210)
    const int h = (lane >> 2) & 1, qr = lane & 3;
    for (int b = lane >> 3; b < nb; b += 4) {
        // Quants of the four 8-element runs as int8 words: [run][word].
        int q[R][4][2];
        float ds[R][4];
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
#pragma unroll
            for (int u = 0; u < 4; u++) ds[r][u] = d * sc[8 * h + is + 2 * u];
#pragma unroll
            for (int wd = 0; wd < 2; wd++) {
                const u32 lo = (u32)ql[2 * wd] | ((u32)ql[2 * wd + 1] << 16);
                const u32 co = (u32)qc[2 * wd] | ((u32)qc[2 * wd + 1] << 16);
                const u32 hi = (u32)qh[2 * wd] | ((u32)qh[2 * wd + 1] << 16);
                // Bytes 0..63, minus 32 per byte (no borrow: each byte is >= 0 before).
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
        FOR_TOKENS {
            int a[4][2];
            float dx[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int sub = b * 8 + 4 * h + u;
                const uint2 v = *(const uint2 *)(qa + (size_t)t * n_in + (size_t)sub * 32 + 8 * qr);
                a[u][0] = (int)v.x;
                a[u][1] = (int)v.y;
                dx[u] = da[(size_t)t * n_sub + sub];
            }
#pragma unroll
            for (int r = 0; r < R; r++) {
                float s = 0.f;
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const int i = __dp4a(q[r][u][1], a[u][1], __dp4a(q[r][u][0], a[u][0], 0));
                    s += ds[r][u] * dx[u] * (float)i;
                }
                acc[r][t] += s;
            }
        }
    }
    finish_rows<NT>(acc, n_tok, y, n_out, row0);
}

#define ENTRY(NAME, BODY)                                                                  \
    extern "C" __global__ void NAME(const u8 *w, const signed char *qa, const float *da,    \
                                    const float *sa, float *y, int n_in, int n_out,         \
                                    int n_tok) {                                           \
        BODY<MAX_TOK>(w, qa, da, sa, y, n_in, n_out, n_tok);                                \
    }                                                                                       \
    extern "C" __global__ void NAME##_t1(const u8 *w, const signed char *qa, const float *da,\
                                         const float *sa, float *y, int n_in, int n_out,    \
                                         int n_tok) {                                      \
        BODY<1>(w, qa, da, sa, y, n_in, n_out, 1);                                          \
    }

ENTRY(mvq_q4_k, q4k_body)
ENTRY(mvq_q6_k, q6k_body)
