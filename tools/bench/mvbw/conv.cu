// conv: do the decode matvecs' integer → float conversions cost time? The Q4_K term converts
// six integers per row (four 6-bit scales and mins, two dp4a sums) and the Q6_K split term
// eight; sm_90 runs I2F at a quarter of the FP32 rate or less. Each exact conversion can
// instead be an integer OR/ADD into the mantissa of 2^23 (or 1.5 · 2^23) and one FADD: the
// same float for these ranges, so the same bits. Engine kernels against copies with the
// magic conversions, interleaved, on weights beyond L2; bits compared.
//   bash tools/bench/mvbw/run.sh OUT conv
// Measured (bench/runs/2026-11-30-h200-o o3): the Q4_K conversions are I2FP (full rate), no
// change (gate/up 38.8 µs either way); the Q6_K ones I2F.S8/S16, 32.3 → 32.0 µs for the down
// projection. The same bits everywhere. Also: the q4k_rows loop in a kernel of its own beats
// the segment kernel (what DecodeTuning::one_matrix took up).
#ifndef MVBW_DEVICE_ONLY
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#endif

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "../../../crates/muser-engine/src/cuda/kernels/mvq1.cu"
#include "bench.cuh"

// v (0 <= v < 2^23) as a float, exactly.
__device__ __forceinline__ float u2f_m(u32 v) { return __int_as_float(0x4B000000u | v) - 8388608.0f; }
// i (|i| < 2^22) as a float, exactly.
__device__ __forceinline__ float i2f_m(int i) {
    return __int_as_float(0x4B400000 + i) - 12582912.0f;
}

// q4k_term with the magic conversions (the same operations otherwise, in the same order).
__device__ __forceinline__ float q4k_term_m(const uint4 &hd, const uint4 &q0, const uint4 &q1,
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
        i1 = __dp4a((int)((q[j] >> 4) & 0x0F0F0F0Fu), c[j], i1);
    }
    const float d0 = d * u2f_m(scp & 0xFF), d1 = d * u2f_m(scp >> 8);
    const float m0f = dmin * u2f_m(mp & 0xFF), m1f = dmin * u2f_m(mp >> 8);
    return d0 * x.dx.x * i2f_m(i0) - m0f * x.sx.x + d1 * x.dx.y * i2f_m(i1) - m1f * x.sx.y;
}

// q4k_rows with the term chosen (M: magic).
template <int RR, bool M>
__device__ __forceinline__ void q4k_rows_c(const u8 *w, const signed char *qa, const float *da,
                                           const float *sa, float *y, int n_in, int n_out,
                                           int row0) {
    Q4K_LANE(RR);
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 hd[RR], q0[RR], q1[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 144;
            Q4K_LOAD(blk, k, hd[r], q0[r], q1[r]);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++)
            acc[r] += M ? q4k_term_m(hd[r], q0[r], q1[r], x, sh, upper)
                        : q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
    }
#pragma unroll
    for (int r = 0; r < RR; r++) {
        const float v = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[r] = v;
    }
}

template <bool M>
__global__ void __launch_bounds__(128, 5)
    rows_c(const u8 *w, int n_out, int n_in, const signed char *qa, const float *da,
           const float *sa, float *y) {
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * 4;
    if (row0 >= n_out) return;
    q4k_rows_c<4, M>(w, qa, da, sa, y + row0, n_in, n_out, row0);
}

// mvq_gu_swiglu_flat with the magic term.
__global__ void __launch_bounds__(128, 5)
    gu_flat_m(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
              const float *da, const float *sa, int n_in, signed char *qo, float *dout,
              float *so) {
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
        const u8 *w = (u < 8 ? wg : wu) + (size_t)(r0 + 4 * (u & 7)) * row_bytes + (size_t)b * 144;
        uint4 hd[4], q0[4], q1[4];
#pragma unroll
        for (int r = 0; r < 4; r++) Q4K_LOAD(w + r * row_bytes, k, hd[r], q0[r], q1[r]);
        Q4K_ACT(x, qa, da, sa, b, k);
        const bool valid = g0 + s < total, odd = i & 1;
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const float t = q4k_term_m(hd[r], q0[r], q1[r], x, sh, upper);
            if (valid && !odd) acc0[r] += t;
            if (valid && odd) acc1[r] += t;
        }
        while (done < GU_PASSES && (done + 1) * nb <= g0 + 8) {
            const int ud = done * 4 + warp;
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const float v = warp_sum(done & 1 ? acc1[r] : acc0[r]);
                if (lane == 0) gu[4 * ud + r] = v;
                if (done & 1)
                    acc1[r] = 0.0f;
                else
                    acc0[r] = 0.0f;
            }
            done++;
        }
    }
    __syncthreads();
    gu_swiglu_store(gu, warp, r0, h, qo, dout, so);
}

// q6ks_rows (split Q6_K) with the magic conversions, 4 rows per warp (mvq_seg_44_lb4's).
__global__ void __launch_bounds__(128, 4)
    q6ks_m(const u8 *w, int n_out, int n_in, const signed char *qa, const float *da,
           const float *sa, float *y) {
    constexpr int RR = 4;
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * RR;
    if (row0 >= n_out) return;
    const int lane = threadIdx.x & 31;
    const int nb = n_in >> 8;
    const u16 *dv = (const u16 *)(w + (size_t)n_out * nb * 208);
    const int h = (lane >> 1) & 1, p = lane & 1;
    float acc[RR];
#pragma unroll
    for (int r = 0; r < RR; r++) acc[r] = 0.0f;
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 lo[RR], hi[RR], qh[RR];
        uint2 sc[RR];
        float d[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const size_t bi = (size_t)min(row0 + r, n_out - 1) * nb + b;
            const u8 *blk = w + bi * 208;
            lo[r] = *(const uint4 *)(blk + 64 * h + 16 * p);
            hi[r] = *(const uint4 *)(blk + 64 * h + 32 + 16 * p);
            qh[r] = *(const uint4 *)(blk + 128 + 32 * h + 16 * p);
            sc[r] = *(const uint2 *)(blk + 192 + 8 * h);
            d[r] = h2f(dv[bi]);
        }
        uint4 a[4];
        float dx[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int sub = b * 8 + 4 * h + u;
            a[u] = *(const uint4 *)(qa + (size_t)sub * 32 + 16 * p);
            dx[u] = da[sub];
        }
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const u32 l4[4] = {lo[r].x, lo[r].y, lo[r].z, lo[r].w};
            const u32 c4[4] = {hi[r].x, hi[r].y, hi[r].z, hi[r].w};
            const u32 h4[4] = {qh[r].x, qh[r].y, qh[r].z, qh[r].w};
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
                iu[0] = __dp4a((int)__vsub4(b1, 0x20202020u), aw[0], iu[0]);
                iu[1] = __dp4a((int)__vsub4(b2, 0x20202020u), aw[1], iu[1]);
                iu[2] = __dp4a((int)__vsub4(b3, 0x20202020u), aw[2], iu[2]);
                iu[3] = __dp4a((int)__vsub4(b4, 0x20202020u), aw[3], iu[3]);
            }
            const u32 s01 = sc[r].x, s23 = sc[r].y;
            float s = 0.f;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const u32 word = u < 2 ? s01 : s23;
                const int sv = (int)(signed char)((word >> (8 * (p + 2 * (u & 1)))) & 0xFF);
                s += (d[r] * i2f_m(sv)) * dx[u] * i2f_m(iu[u]);
            }
            acc[r] += s;
        }
    }
#pragma unroll
    for (int r = 0; r < RR; r++) {
        const float v = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < n_out) y[row0 + r] = v;
    }
}

#ifndef MVBW_DEVICE_ONLY
__global__ void fill_i8(signed char *a, float *d, float *s, int n, u32 seed) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        a[i] = (signed char)(hash32(i, seed) & 0xFF);
        if (i % 32 == 0) {
            d[i / 32] = 0.01f + (hash32(i, seed + 1) & 0xFF) * 1e-4f;
            s[i / 32] = (float)((int)(hash32(i, seed + 2) & 0xFFF) - 2048) * 1e-3f;
        }
    }
}

__global__ void fill_d16(u16 *d, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        d[i] = (u16)(0x1C00u | (hash32(i, 7) & 0x3FFu));
}

template <typename F>
static double time_us(F launch, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> v;
    for (int w = 0; w < 4; w++) launch(w);
    CK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 7; rep++) {
        CK(cudaEventRecord(a));
        for (int i = 0; i < reps; i++) launch(i);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        v.push_back(ms * 1000.0f / reps);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static int differ(const float *dev_a, const float *dev_b, int n) {
    std::vector<float> a(n), b(n);
    CK(cudaMemcpy(a.data(), dev_a, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), dev_b, n * 4, cudaMemcpyDeviceToHost));
    int d = 0;
    for (int i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

int main() {
    const int n_in = 6656, n_ff = 19968, nb = n_in / 256;
    signed char *qa, *qo;
    float *da, *sa, *h1, *h2, *dout, *so;
    CK(cudaMalloc(&qa, 19968));
    CK(cudaMalloc(&da, 19968 / 32 * 4));
    CK(cudaMalloc(&sa, 19968 / 32 * 4));
    CK(cudaMalloc(&qo, n_ff));
    CK(cudaMalloc(&h1, 262144 * 4));
    CK(cudaMalloc(&h2, 262144 * 4));
    CK(cudaMalloc(&dout, n_ff / 32 * 4));
    CK(cudaMalloc(&so, n_ff / 32 * 4));
    fill_i8<<<64, 256>>>(qa, da, sa, 19968, 5);
    // FFN gate/up (2 × 150 MB per set, 2 sets).
    {
        const size_t mat = (size_t)n_ff * nb * 144;
        u8 *w[2][2];
        for (int s = 0; s < 2; s++)
            for (int j = 0; j < 2; j++) {
                CK(cudaMalloc(&w[s][j], mat));
                fill_q4k<<<1024, 256>>>(w[s][j], mat / 144, 17 + 2 * s + j);
            }
        const int grid = n_ff / 32;
        mvq_gu_swiglu_flat<<<grid, 128>>>(w[0][0], w[0][1], n_ff, h1, qa, da, sa, n_in, qo, dout, so);
        gu_flat_m<<<grid, 128>>>(w[0][0], w[0][1], n_ff, h2, qa, da, sa, n_in, qo, dout, so);
        CK(cudaDeviceSynchronize());
        printf("gate/up flat: magic vs engine: %d of %d outputs differ in bits\n", differ(h1, h2, n_ff), n_ff);
        for (int round = 0; round < 3; round++) {
            const double te = time_us([&](int i) {
                mvq_gu_swiglu_flat<<<grid, 128>>>(w[i % 2][0], w[i % 2][1], n_ff, h1, qa, da, sa, n_in, qo, dout, so);
            }, 50);
            const double tm = time_us([&](int i) {
                gu_flat_m<<<grid, 128>>>(w[i % 2][0], w[i % 2][1], n_ff, h2, qa, da, sa, n_in, qo, dout, so);
            }, 50);
            printf("gate/up flat round %d: engine %.2f us, magic %.2f us (%.0f / %.0f GB/s)\n", round, te, tm,
                   2.0 * mat / te * 1e-3, 2.0 * mat / tm * 1e-3);
        }
        for (int s = 0; s < 2; s++)
            for (int j = 0; j < 2; j++) CK(cudaFree(w[s][j]));
    }
    // Sub-wave and down shapes, Q4_K, 4 rows per warp (the engine's segment kernel's loop).
    struct Shape { const char *name; int n_out, n_in, sets; };
    for (Shape sh : {Shape{"O 6656x4096", 6656, 4096, 10}, Shape{"QKVG 8704x6656", 8704, 6656, 5},
                     Shape{"down 6656x19968", 6656, 19968, 2}}) {
        const int nbs = sh.n_in / 256;
        const size_t m = (size_t)sh.n_out * nbs * 144;
        std::vector<u8 *> ws(sh.sets);
        for (size_t i = 0; i < ws.size(); i++) {
            CK(cudaMalloc(&ws[i], m));
            fill_q4k<<<1024, 256>>>(ws[i], m / 144, 1234 + (u32)i);
        }
        const int grid = sh.n_out / 16;
        rows_c<false><<<grid, 128>>>(ws[0], sh.n_out, sh.n_in, qa, da, sa, h1);
        rows_c<true><<<grid, 128>>>(ws[0], sh.n_out, sh.n_in, qa, da, sa, h2);
        CK(cudaDeviceSynchronize());
        printf("%s: magic vs plain: %d of %d differ in bits\n", sh.name, differ(h1, h2, sh.n_out), sh.n_out);
        for (int round = 0; round < 3; round++) {
            const double te = time_us([&](int i) {
                rows_c<false><<<grid, 128>>>(ws[i % sh.sets], sh.n_out, sh.n_in, qa, da, sa, h1);
            }, 100);
            const double tm = time_us([&](int i) {
                rows_c<true><<<grid, 128>>>(ws[i % sh.sets], sh.n_out, sh.n_in, qa, da, sa, h2);
            }, 100);
            printf("%s round %d: plain %.2f us, magic %.2f us (%.0f / %.0f GB/s)\n", sh.name, round, te, tm,
                   m / te * 1e-3, m / tm * 1e-3);
        }
        for (auto p : ws) CK(cudaFree(p));
    }
    // Q6_K split: the FFN down shape (2 sets) and the LM head, against mvq_seg_44_lb4.
    for (Shape sh : {Shape{"Q6_K down 6656x19968", 6656, 19968, 2}, Shape{"Q6_K LM head 202048x6656", 202048, 6656, 1}}) {
        const int nbs = sh.n_in / 256;
        const size_t nbl = (size_t)sh.n_out * nbs, m = nbl * 210;
        std::vector<u8 *> ws(sh.sets);
        for (size_t i = 0; i < ws.size(); i++) {
            CK(cudaMalloc(&ws[i], m));
            fill_q4k<<<1024, 256>>>(ws[i], m / 144, 99 + (u32)i);
            fill_d16<<<1024, 256>>>((u16 *)(ws[i] + nbl * 208), nbl);
        }
        const int blocks = sh.n_out / 16;
        auto eng = [&](const u8 *w, float *y) {
            mvq_seg_44_lb4<<<blocks, 128>>>(w, SEG_Q6_K_SPLIT, sh.n_out, y, nullptr, 0, 0, nullptr,
                                             1 << 30, nullptr, 0, 0, nullptr, 1 << 30, nullptr, 0,
                                             0, nullptr, 1 << 30, qa, da, sa, sh.n_in, 0, 1.0f, 0.0f);
        };
        eng(ws[0], h1);
        q6ks_m<<<blocks, 128>>>(ws[0], sh.n_out, sh.n_in, qa, da, sa, h2);
        CK(cudaDeviceSynchronize());
        printf("%s: magic vs engine: %d of %d differ in bits\n", sh.name, differ(h1, h2, sh.n_out), sh.n_out);
        const int reps = sh.sets > 1 ? 50 : 10;
        for (int round = 0; round < 3; round++) {
            const double te = time_us([&](int i) { eng(ws[i % sh.sets], h1); }, reps);
            const double tm = time_us([&](int i) {
                q6ks_m<<<blocks, 128>>>(ws[i % sh.sets], sh.n_out, sh.n_in, qa, da, sa, h2);
            }, reps);
            printf("%s round %d: engine %.2f us, magic %.2f us (%.0f / %.0f GB/s)\n", sh.name, round, te, tm,
                   m / te * 1e-3, m / tm * 1e-3);
        }
        for (auto p : ws) CK(cudaFree(p));
    }
    return 0;
}
#endif
