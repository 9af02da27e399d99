// ffnfuse: the FFN (gate/up + SwiGLU, then down) as one launch without a grid-wide wait. Blocks
// form clusters of 8; block i of cluster c computes gate/up rows 32(8c + i) .. + 32 as the
// engine's flat launch does (SwiGLU, int8 quantization), so the cluster holds the 256 values
// h[256c .. 256c + 256), exactly super-block column c of the down projection. After one
// cluster barrier each block multiplies its eighth of the down projection's rows by that one
// super-block (the down weights re-laid column-chunk-major so that a chunk is contiguous) and
// adds the partial sums into the output as 64-bit fixed point (2^-20 here), with atomics: integer
// adds, so the sum does not depend on their order. The consumer (the next norm) converts and
// zeroes the accumulator. Against the engine's two launches (flat gate/up, then the down
// projection), each behind a one-block norm stand-in, as a CUDA graph of L layers over
// DRAM-cold weights. Built and run on the device: bash tools/bench/mvbw/run.sh OUT ffnfuse
#ifndef MVBW_DEVICE_ONLY
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#endif

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "../../../crates/muser-engine/src/cuda/kernels/mvq1.cu"
#include "bench.cuh"

#define FX_SCALE 1048576.0f  // 2^20 (the random test weights give sums up to ~1e8)
#define CL 8

// Q4_K file layout (row-major super-blocks) → column-chunk-major: block (row, c) at
// (c · n_out + row) · 144.
__global__ void q4k_colmajor(const u8 *src, u8 *dst, int n_out, int nb) {
    const long long n = (long long)n_out * nb;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / nb, c = i % nb;
        const uint4 *s = (const uint4 *)(src + i * 144);
        uint4 *d = (uint4 *)(dst + (c * n_out + row) * 144);
        for (int j = 0; j < 9; j++) d[j] = s[j];
    }
}

// Norm stand-ins (one block of 1,024): x = 0.5 x + tanh(y / 1000), RMS-normed into int8 rows.
// MODE 0 reads y as f32; MODE 1 as the fused launch's fixed-point accumulator, zeroing it.
template <int MODE>
__global__ void __launch_bounds__(1024) norm_in(const float *y, long long *acc, float *x, int n,
                                                 signed char *qa, float *da, float *sa) {
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += 1024) {
        float yi;
        if (MODE == 0) {
            yi = y[i];
        } else {
            yi = (float)((double)acc[i] * (1.0 / 1048576.0));
            acc[i] = 0;
        }
        const float v = 0.5f * x[i] + tanhf(yi * 1e-3f);
        x[i] = v;
        ss += v * v;
    }
    const float sc = rsqrtf(block_sum1024(ss) / n + 1e-6f);
    for (int b = threadIdx.x >> 5; b < n / 32; b += 32)
        quant_block32(x[b * 32 + (threadIdx.x & 31)] * sc, b, qa, da, sa);
}

// The fused FFN. n_out (the down projection's rows) a multiple of 8 · 4 · RR is not required:
// rows past a warp's share repeat its last row's loads and are not added.
// COL: the down weights column-chunk-major (q4k_colmajor) or in the file's row-major layout.
// MINB: blocks per SM (5 as the engine's gate/up launch: 77 clusters of 8 fit at once on the
// H200, one fewer than the 78 launched; 6: at most 80 registers).
template <int RR, int COL = 1, int MINB = 5>
__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(128, MINB)
    ffn_fused(const u8 *wg, const u8 *wu, int n_ff, const signed char *qa, const float *da,
              const float *sa, int n_in, float *h, signed char *qo, float *dout, float *so,
              const u8 *wd_c, int n_out, unsigned long long *acc) {
    gu_swiglu_flat<false>(wg, wu, n_ff, h, qa, da, sa, n_in, qo, dout, so);
    cluster_sync_all();
    const int c = blockIdx.x / CL, rank = blockIdx.x % CL;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int k = lane & 3, s = lane >> 2, sh = 16 * (k & 1);
    const bool upper = k >= 2;
    // The cluster's 256 activations (written by its blocks before the barrier; L2 loads).
    const int s0 = c * 8 + 2 * k;
    const uint4 *av = (const uint4 *)(qo + (size_t)s0 * 32);
    const Q4Act x = {__ldcg(av), __ldcg(av + 1), __ldcg(av + 2), __ldcg(av + 3),
                     make_float2(__ldcg(dout + s0), __ldcg(dout + s0 + 1)),
                     make_float2(__ldcg(so + s0), __ldcg(so + s0 + 1))};
    const int rpb = (n_out + CL - 1) / CL, rb0 = rank * rpb, rb1 = min(n_out, rb0 + rpb);
    const int rpw = (rpb + 3) / 4, r0 = rb0 + warp * rpw, r1 = min(rb1, r0 + rpw);
    if (r0 >= r1) return;
    const u8 *wc = wd_c + (size_t)c * (COL ? (size_t)n_out * 144 : 144);
    const size_t rs = COL ? 144 : (size_t)(n_ff >> 8) * 144;
    for (int t = r0; t < r1; t += 8 * RR) {
        uint4 hd[RR], q0[RR], q1[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const int row = min(t + 8 * r + s, r1 - 1);
            Q4K_LOAD(wc + (size_t)row * rs, k, hd[r], q0[r], q1[r]);
        }
#pragma unroll
        for (int r = 0; r < RR; r++) {
            float v = q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
            v += __shfl_xor_sync(0xffffffffu, v, 1);
            v += __shfl_xor_sync(0xffffffffu, v, 2);
            const int row = t + 8 * r + s;
            if (k == 0 && row < r1)
                atomicAdd(acc + row, (unsigned long long)__float2ll_rn(v * FX_SCALE));
        }
    }
}

#ifndef MVBW_DEVICE_ONLY
int main() {
    const int E = 6656, F = 19968, nbE = E / 256, nbF = F / 256;
    const size_t mg = (size_t)F * nbE * 144, md = (size_t)E * nbF * 144;
    const int sets = 6;  // 6 x 225 MB, far beyond L2
    std::vector<u8 *> wg(sets), wu(sets), wd(sets), wdc(sets);
    for (int s = 0; s < sets; s++) {
        CK(cudaMalloc(&wg[s], mg));
        CK(cudaMalloc(&wu[s], mg));
        CK(cudaMalloc(&wd[s], md));
        CK(cudaMalloc(&wdc[s], md));
        fill_q4k<<<1024, 256>>>(wg[s], mg / 144, 31 + 3 * s);
        fill_q4k<<<1024, 256>>>(wu[s], mg / 144, 32 + 3 * s);
        fill_q4k<<<1024, 256>>>(wd[s], md / 144, 33 + 3 * s);
        q4k_colmajor<<<1024, 256>>>(wd[s], wdc[s], E, nbF);
    }
    signed char *qa, *qo;
    float *da, *sa, *h, *dout, *so, *y, *x;
    unsigned long long *acc;
    CK(cudaMalloc(&qa, E));
    CK(cudaMalloc(&da, E / 32 * 4));
    CK(cudaMalloc(&sa, E / 32 * 4));
    CK(cudaMalloc(&qo, F));
    CK(cudaMalloc(&h, F * 4));
    CK(cudaMalloc(&dout, F / 32 * 4));
    CK(cudaMalloc(&so, F / 32 * 4));
    CK(cudaMalloc(&y, E * 4));
    CK(cudaMalloc(&x, E * 4));
    CK(cudaMalloc(&acc, E * 8));
    CK(cudaMemset(acc, 0, E * 8));
    CK(cudaMemset(x, 0, E * 4));
    fill_i8<<<64, 256>>>(qa, da, sa, E, 5);
    CK(cudaDeviceSynchronize());

    const int ncl = max_clusters(ffn_fused<4>, F / 32, 128, CL);
    printf("max active clusters at 6 blocks per SM: %d\n",
           max_clusters(ffn_fused<4, 1, 6>, F / 32, 128, CL));
    printf("fused launch: %d clusters of %d (grid %d blocks); max active clusters %d\n", F / 32 / CL,
           CL, F / 32, ncl);

    // Same sums: the engine's two launches against the fused one, from the same int8 row.
    const int grid = F / 32;
    std::vector<float> ya(E);
    std::vector<long long> yb(E);
    mvq_gu_swiglu_flat<<<grid, 128>>>(wg[0], wu[0], F, h, qa, da, sa, E, qo, dout, so);
    mvq_one_q4k_lb5<<<E / 16, 128>>>(wd[0], E, y, qo, dout, so, F);
    CK(cudaMemcpy(ya.data(), y, E * 4, cudaMemcpyDeviceToHost));
    for (int v = 0; v < 4; v++) {
        CK(cudaMemset(acc, 0, E * 8));
        if (v == 0)
            ffn_fused<4><<<grid, 128>>>(wg[0], wu[0], F, qa, da, sa, E, h, qo, dout, so, wdc[0], E, acc);
        else if (v == 3)
            ffn_fused<4, 1, 6><<<grid, 128>>>(wg[0], wu[0], F, qa, da, sa, E, h, qo, dout, so, wdc[0], E, acc);
        else if (v == 2)
            ffn_fused<4, 0><<<grid, 128>>>(wg[0], wu[0], F, qa, da, sa, E, h, qo, dout, so, wd[0], E, acc);
        else
            ffn_fused<2><<<grid, 128>>>(wg[0], wu[0], F, qa, da, sa, E, h, qo, dout, so, wdc[0], E, acc);
        CK(cudaGetLastError());
        CK(cudaMemcpy(yb.data(), acc, E * 8, cudaMemcpyDeviceToHost));
        double num = 0, den = 0, mx = 0;
        int nan = 0;
        for (int i = 0; i < E; i++) {
            const double b = (double)yb[i] / 1048576.0, a = ya[i];
            if (a != a) nan++;
            num += (a - b) * (a - b);
            den += a * a;
            mx = std::max(mx, fabs(a - b));
        }
        printf("fused %s vs two launches: NMSE %.3e, max |diff| %.3g, max |y| %.3g, %d NaN\n",
               v == 0 ? "RR4" : v == 1 ? "RR2" : v == 2 ? "RR4 file layout" : "lb6 RR4", num / den, mx, fabs(ya[0]), nan);
    }
    CK(cudaMemset(acc, 0, E * 8));

    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const int L = 24;
    auto graph = [&](int mode) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int l = 0; l < L; l++) {
            const int s = l % sets;
            if (mode == 0) {
                norm_in<0><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
                mvq_gu_swiglu_flat<<<grid, 128, 0, st>>>(wg[s], wu[s], F, h, qa, da, sa, E, qo, dout, so);
                mvq_one_q4k_lb5<<<E / 16, 128, 0, st>>>(wd[s], E, y, qo, dout, so, F);
            } else if (mode == 1 || mode == 2) {
                norm_in<1><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
                if (mode == 1)
                    ffn_fused<4><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wdc[s], E, acc);
                else
                    ffn_fused<2><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wdc[s], E, acc);
            } else if (mode >= 6) {
                norm_in<1><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
                if (mode == 6)
                    ffn_fused<4, 1, 6><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wdc[s], E, acc);
                else if (mode == 7)
                    ffn_fused<2, 1, 6><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wdc[s], E, acc);
                else if (mode == 8)
                    ffn_fused<4, 0, 6><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wd[s], E, acc);
                else
                    ffn_fused<4, 1, 6><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wdc[s], 0, acc);
            } else if (mode == 5) {
                norm_in<1><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
                ffn_fused<4, 0><<<grid, 128, 0, st>>>(wg[s], wu[s], F, qa, da, sa, E, h, qo, dout, so, wd[s], E, acc);
            } else if (mode == 3) {  // gate/up alone
                norm_in<0><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
                mvq_gu_swiglu_flat<<<grid, 128, 0, st>>>(wg[s], wu[s], F, h, qa, da, sa, E, qo, dout, so);
            } else {  // norm stand-in alone
                norm_in<0><<<1, 1024, 0, st>>>(y, (long long *)acc, x, E, qa, da, sa);
            }
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphDestroy(g));
        return ge;
    };
    const char *names[] = {"two launches (engine: flat gate/up, down)", "fused, RR4",
                           "fused, RR2", "gate/up alone", "norm stand-in alone",
                           "fused, RR4, down in the file layout", "fused lb6, RR4",
                           "fused lb6, RR2", "fused lb6, RR4, file layout",
                           "fused lb6, no down rows (gate/up + barrier)"};
    const int NM = 10;
    cudaGraphExec_t ge[NM];
    for (int m = 0; m < NM; m++) ge[m] = graph(m);
    for (int round = 0; round < 3; round++)
        for (int m = 0; m < NM; m++) {
            for (int w = 0; w < 3; w++) CK(cudaGraphLaunch(ge[m], st));
            const double ms = median_ms(st, 10, [&](int) { CK(cudaGraphLaunch(ge[m], st)); });
            CK(cudaGetLastError());
            printf("round %d %-44s %8.2f us per layer (norm + FFN)\n", round, names[m],
                   ms * 1000.0 / L);
        }
    return 0;
}
#endif
