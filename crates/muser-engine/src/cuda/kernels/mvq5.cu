// One-token (decode) Q5_K matvec over int8 activations (appended to mvq1.cu at compile time:
// ld_w16, Q4Act and Q4K_ACT come from there). The numerics of the Q4_K kernels: activations
// in int8 blocks of 32 with scale d and d·Σq, dp4a over the 5-bit quants, the min term from
// d·Σq. The f32-activation kernel (matvec.cu's mv_q5_k) is arithmetic-bound at ~0.64 TB/s on
// the H200 (bench/runs/2026-11-30-h200); llama.cpp rounds activations for Q5_K too (Q8_K).
//
// Q5_K super-block (176 bytes, 16-byte aligned when rows are): d, dmin (f16), 12 bytes of
// 6-bit scales and mins (Q4_K's packing), qh[32] (bit 2j of byte l: the fifth bit of element
// l of sub-block 2j, bit 2j + 1: of element l of sub-block 2j + 1), qs[128] (quarter j's 32
// bytes: sub-block 2j in the low nibbles, 2j + 1 in the high). Lane = (super-block slot 0..7,
// quarter k 0..3), as q4k_rows; each lane loads the header, all of qh and its quarter's quants
// (five 16-byte loads a row; the header and qh are shared with the other three quarters in L1).

// A lane's term of one row (q4k_term's, with the fifth bits).
__device__ __forceinline__ float q5k_term(const uint4 &hd, const uint4 &h0, const uint4 &h1,
                                          const uint4 &q0, const uint4 &q1, const Q4Act &x,
                                          int k) {
    const int sh = 16 * (k & 1);
    const bool upper = k >= 2;
    const float d = h2f((u16)(hd.x & 0xFFFF)), dmin = h2f((u16)(hd.x >> 16));
    const u32 b0 = (hd.y >> sh) & 0xFFFF, b1 = (hd.z >> sh) & 0xFFFF;
    const u32 b2 = (hd.w >> sh) & 0xFFFF;
    const u32 scp = upper ? ((b2 & 0x0F0F) | ((b0 & 0xC0C0) >> 2)) : (b0 & 0x3F3F);
    const u32 mp = upper ? (((b2 >> 4) & 0x0F0F) | ((b1 & 0xC0C0) >> 2)) : (b1 & 0x3F3F);
    const u32 q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const u32 h[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
    const int a[8] = {(int)x.a0.x, (int)x.a0.y, (int)x.a0.z, (int)x.a0.w,
                      (int)x.a1.x, (int)x.a1.y, (int)x.a1.z, (int)x.a1.w};
    const int c[8] = {(int)x.c0.x, (int)x.c0.y, (int)x.c0.z, (int)x.c0.w,
                      (int)x.c1.x, (int)x.c1.y, (int)x.c1.z, (int)x.c1.w};
    const int s0 = 2 * k, s1 = 2 * k + 1;
    int i0 = 0, i1 = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const u32 lo = (q[j] & 0x0F0F0F0Fu) | (((h[j] >> s0) & 0x01010101u) << 4);
        const u32 hi = ((q[j] >> 4) & 0x0F0F0F0Fu) | (((h[j] >> s1) & 0x01010101u) << 4);
        i0 = __dp4a((int)lo, a[j], i0);
        i1 = __dp4a((int)hi, c[j], i1);
    }
    const float d0 = d * (int)(scp & 0xFF), d1 = d * (int)(scp >> 8);
    const float m0f = dmin * (int)(mp & 0xFF), m1f = dmin * (int)(mp >> 8);
    return d0 * x.dx.x * (float)i0 - m0f * x.sx.x + d1 * x.dx.y * (float)i1 - m1f * x.sx.y;
}

// Rows row0 .. row0 + RR of the matrix into y[0 .. RR) (those below n_out).
template <int RR>
__device__ __forceinline__ void q5k_rows(const u8 *w, const signed char *qa, const float *da,
                                         const float *sa, float *y, int n_in, int n_out,
                                         int row0) {
    const int lane = threadIdx.x & 31, nb = n_in >> 8, k = lane & 3;
    const size_t row_bytes = (size_t)nb * 176;
    float acc[RR];
#pragma unroll
    for (int r = 0; r < RR; r++) acc[r] = 0.0f;
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 hd[RR], h0[RR], h1[RR], q0[RR], q1[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 176;
            hd[r] = ld_w16(blk);
            h0[r] = ld_w16(blk + 16);
            h1[r] = ld_w16(blk + 32);
            q0[r] = ld_w16(blk + 48 + 32 * k);
            q1[r] = ld_w16(blk + 64 + 32 * k);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++) acc[r] += q5k_term(hd[r], h0[r], h1[r], q0[r], q1[r], x, k);
    }
#pragma unroll
    for (int r = 0; r < RR; r++) {
        const float s = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[r] = s;
    }
}

// ONE_ENTRY's signature (Cuda::matvec1_q5k): each warp RR rows, any number of warps a block.
#define Q5K_ENTRY(NAME, RR, MINB)                                                              \
    extern "C" __global__ void __launch_bounds__(128, MINB)                                    \
        NAME(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,         \
             const float *sa, int n_in) {                                                      \
        const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (RR);         \
        if (row0 >= n_out) return;                                                             \
        q5k_rows<RR>(w, qa, da, sa, y + row0, n_in, n_out, row0);                              \
    }
Q5K_ENTRY(mvq_one_q5k_r2, 2, 5)
Q5K_ENTRY(mvq_one_q5k_r4, 4, 4)
