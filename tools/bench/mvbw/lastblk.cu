// lastblk: the norm tail after the output and down projections done by the last block of the
// projection's own launch to finish (each block fences its rows, takes a ticket; the block that
// takes the last one computes the whole tail: Σo², Σx², Σx·op, Σop² over the row, x' and the
// next norm's int8 row, as norm_tail_q8_cl1), so that a layer launches two kernels fewer and
// no cluster exchange is needed. Compared, as a CUDA graph of L layers over DRAM-cold weights
// (output projection 6,656 x 4,096, the flat FFN gate/up, the down projection, a Q/K/V/gate-
// shaped matvec, and a stand-in for the attention: a norm tail of 4,096 values with the
// output projection's prefetch blocks), with the engine's separate norm tail launches (with
// their L2-prefetch blocks). Built and run on the device: bash tools/bench/mvbw/run.sh OUT lastblk
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
#include "../../../crates/muser-engine/src/cuda/kernels/decode.cu"
#include "../../../crates/muser-engine/src/cuda/kernels/norm_cluster.cu"
#include "../../../crates/muser-engine/src/cuda/kernels/prefetch.cu"
#include "bench.cuh"

// The whole norm tail (mode 2, one exchange's formula) in one block: x' = x + norm(o)·wp,
// h = norm(x')·wn as int8 (store_q8). n % 8 == 0, blockDim a multiple of 32.
__device__ __forceinline__ void lb_tail(float *x, const float *o, const float *wp,
                                        float eps_post, const float *wn, float eps,
                                        signed char *qa, float *da, float *sa, int n) {
    __shared__ float4 sh4[32];
    __shared__ float4 tot;
    const int chunks = n >> 3;
    float4 p = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int i0 = 8 * c;
        const float4 a = *(const float4 *)(x + i0), b = *(const float4 *)(x + i0 + 4);
        const float4 e = __ldcg((const float4 *)(o + i0)), f = __ldcg((const float4 *)(o + i0 + 4));
        const float4 g = *(const float4 *)(wp + i0), hh = *(const float4 *)(wp + i0 + 4);
        const float xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float ov[8] = {e.x, e.y, e.z, e.w, f.x, f.y, f.z, f.w};
        const float pv[8] = {g.x, g.y, g.z, g.w, hh.x, hh.y, hh.z, hh.w};
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float op = __fmul_rn(ov[k], pv[k]);
            p.x = __fmaf_rn(ov[k], ov[k], p.x);
            p.y = __fmaf_rn(xv[k], xv[k], p.y);
            p.z = __fmaf_rn(xv[k], op, p.z);
            p.w = __fmaf_rn(op, op, p.w);
        }
    }
    const float4 t0 = block_sum4(p, sh4);
    if (threadIdx.x == 0) tot = t0;
    __syncthreads();
    const float4 t = tot;
    const float scale = rsqrtf(t.x / n + eps_post);
    const float v = t.y + scale * (2.0f * t.z + scale * t.w);
    const float scale2 = rsqrtf((v < 0.0f ? 0.0f : v) / n + eps);
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int c0 = 0; c0 < chunks; c0 += blockDim.x) {
        const int c = c0 + threadIdx.x, i0 = 8 * c;
        const bool on = c < chunks;
        const float4 a = on ? *(const float4 *)(x + i0) : z, b = on ? *(const float4 *)(x + i0 + 4) : z;
        const float4 e = on ? __ldcg((const float4 *)(o + i0)) : z;
        const float4 f = on ? __ldcg((const float4 *)(o + i0 + 4)) : z;
        const float4 g = on ? *(const float4 *)(wp + i0) : z, hh = on ? *(const float4 *)(wp + i0 + 4) : z;
        const float4 m = on ? *(const float4 *)(wn + i0) : z, r = on ? *(const float4 *)(wn + i0 + 4) : z;
        float xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float ov[8] = {e.x, e.y, e.z, e.w, f.x, f.y, f.z, f.w};
        const float pv[8] = {g.x, g.y, g.z, g.w, hh.x, hh.y, hh.z, hh.w};
        const float wv[8] = {m.x, m.y, m.z, m.w, r.x, r.y, r.z, r.w};
        float hv[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            xv[k] += ov[k] * scale * pv[k];
            hv[k] = xv[k] * scale2 * wv[k];
        }
        if (on) {
            *(float4 *)(x + i0) = make_float4(xv[0], xv[1], xv[2], xv[3]);
            *(float4 *)(x + i0 + 4) = make_float4(xv[4], xv[5], xv[6], xv[7]);
        }
        store_q8(hv, qa, da, sa, i0, on);
    }
}

// mvq_one_q4k_lb5's rows, then the ticket: the block that finishes last runs lb_tail over the
// launch's whole output y (n_out values); the others prefetch their share of PF_ARGS's ranges.
extern "C" __global__ void __launch_bounds__(256, 2)
    mv_lb(const u8 *w, int n_out, float *y, const signed char *qi, const float *di,
          const float *si, int n_in, float *x, const float *wp, const float *wn,
          signed char *qa, float *da, float *sa, unsigned *cnt, PF_ARGS) {
    __shared__ int last;
    const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 4;
    if (row0 < n_out) q4k_rows<4>(w, qi, di, si, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);
    if ((threadIdx.x & 31) == 0) __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(cnt, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) {
        prefetch_ranges(PF_PASS, blockIdx.x, gridDim.x);
        return;
    }
    __threadfence();
    if (threadIdx.x == 0) *cnt = 0u;
    lb_tail(x, y, wp, 1e-6f, wn, 1e-6f, qa, da, sa, n_out);
}

#ifndef MVBW_DEVICE_ONLY
__global__ void fill_f32(float *p, int n, u32 seed, float lo, float span) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = lo + span * (float)(hash32(i, seed) & 0xFFFF) / 65536.0f;
}

int main() {
    const int E = 6656, F = 19968, Q = 8704, A = 4096, nbE = E / 256, nbF = F / 256, nbA = A / 256;
    const size_t mq = (size_t)Q * nbE * 144, mg = (size_t)F * nbE * 144, md = (size_t)E * nbF * 144;
    const size_t mo = (size_t)E * nbA * 144;
    const int sets = 4;  // 4 x 272 MB
    std::vector<u8 *> wq(sets), wo(sets), wg(sets), wu(sets), wd(sets);
    for (int s = 0; s < sets; s++) {
        CK(cudaMalloc(&wq[s], mq));
        CK(cudaMalloc(&wo[s], mo));
        CK(cudaMalloc(&wg[s], mg));
        CK(cudaMalloc(&wu[s], mg));
        CK(cudaMalloc(&wd[s], md));
        fill_q4k<<<1024, 256>>>(wq[s], mq / 144, 41 + 5 * s);
        fill_q4k<<<1024, 256>>>(wo[s], mo / 144, 42 + 5 * s);
        fill_q4k<<<1024, 256>>>(wg[s], mg / 144, 43 + 5 * s);
        fill_q4k<<<1024, 256>>>(wu[s], mg / 144, 44 + 5 * s);
        fill_q4k<<<1024, 256>>>(wd[s], md / 144, 45 + 5 * s);
    }
    // x: the residual; xa: the attention stand-in's scratch row; yq, yo, yd: outputs.
    float *x, *xa, *yq, *yo, *yd, *h, *hf, *wp, *wn, *dq, *sq, *da4, *sa4, *dout, *so;
    signed char *qa, *qa4, *qo;
    unsigned *cnt;
    CK(cudaMalloc(&x, E * 4));
    CK(cudaMalloc(&xa, A * 4));
    CK(cudaMalloc(&yq, Q * 4));
    CK(cudaMalloc(&yo, E * 4));
    CK(cudaMalloc(&yd, E * 4));
    CK(cudaMalloc(&h, F * 4));
    CK(cudaMalloc(&hf, E * 4));
    CK(cudaMalloc(&wp, E * 4));
    CK(cudaMalloc(&wn, E * 4));
    CK(cudaMalloc(&qa, E));
    CK(cudaMalloc(&dq, E / 32 * 4));
    CK(cudaMalloc(&sq, E / 32 * 4));
    CK(cudaMalloc(&qa4, A));
    CK(cudaMalloc(&da4, A / 32 * 4));
    CK(cudaMalloc(&sa4, A / 32 * 4));
    CK(cudaMalloc(&qo, F));
    CK(cudaMalloc(&dout, F / 32 * 4));
    CK(cudaMalloc(&so, F / 32 * 4));
    CK(cudaMalloc(&cnt, 64));
    CK(cudaMemset(cnt, 0, 64));
    fill_f32<<<64, 256>>>(wp, E, 3, 0.5f, 1.0f);
    fill_f32<<<64, 256>>>(wn, E, 4, 0.5f, 1.0f);
    fill_f32<<<64, 256>>>(yd, E, 5, -1.0f, 2.0f);
    fill_f32<<<64, 256>>>(yq, Q, 6, -1.0f, 2.0f);
    fill_f32<<<64, 256>>>(x, E, 7, -1.0f, 2.0f);
    fill_f32<<<64, 256>>>(xa, A, 8, -1.0f, 2.0f);
    CK(cudaDeviceSynchronize());

    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const u8 *nil = nullptr;
    // One layer in `mode`: 0 the engine's (norm tails with prefetch blocks as their own
    // launches, the projections in one-warp blocks), 1 the engine's with the projections in
    // blocks of 4 warps, 2 the tails in the projections' last blocks (4 warps, no prefetch),
    // 3 the same with the other blocks prefetching what the tails' extra blocks did, 4 as 3 in
    // blocks of 8 warps, 5 as 3 in blocks of 2 warps.
    auto layer = [&](int mode, int l) {
        const int s = l % sets;
        const int pfq = (int)(mq / 5), pfg = (int)(mg * 6 / 100), pfo = (int)(mo * 6 / 10);
        const int pfd = (int)(md / 10);
        const bool lb = mode >= 2, pf = mode != 2;
        const int pw = mode == 0 ? 1 : mode == 4 ? 8 : mode == 5 ? 2 : 4;
        // The attention stand-in: a norm tail over the first A values of yq, with the output
        // projection's prefetch blocks; its int8 row is the output projection's input.
        launch_cl(st, norm_tail_q8_cl1_pf, 24, 1024, 8, xa, (const float *)yq, (const float *)wp,
                  1e-6f, (const float *)wn, 1e-6f, hf, qa4, da4, sa4, A, 2, (const u8 *)wo[s], pfo,
                  nil, 0, nil, 0, nil, 0);
        if (!lb) {
            mvq_one_q4k_lb5<<<E / (4 * pw), 32 * pw, 0, st>>>(wo[s], E, yo, qa4, da4, sa4, A);
            launch_cl(st, norm_tail_q8_cl1_pf, 24, 1024, 8, x, (const float *)yo, (const float *)wp,
                      1e-6f, (const float *)wn, 1e-6f, hf, qa, dq, sq, E, 2, (const u8 *)wg[s], pfg,
                      (const u8 *)wu[s], pfg, nil, 0, nil, 0);
        } else {
            mv_lb<<<E / (4 * pw), 32 * pw, 0, st>>>(wo[s], E, yo, qa4, da4, sa4, A, x, wp, wn, qa,
                                                    dq, sq, cnt, (const u8 *)wg[s], pf ? pfg : 0,
                                                    (const u8 *)wu[s], pf ? pfg : 0, nil, 0, nil, 0);
        }
        mvq_gu_swiglu_flat_tp<<<F / 32, 128, 0, st>>>(wg[s], wu[s], F, h, qa, dq, sq, E, qo, dout,
                                                      so, (const u8 *)wd[s], pfd, nil, 0, nil, 0,
                                                      nil, 0);
        if (!lb) {
            mvq_one_q4k_lb5<<<E / (4 * pw), 32 * pw, 0, st>>>(wd[s], E, yd, qo, dout, so, F);
            launch_cl(st, norm_tail_q8_cl1_pf, 24, 1024, 8, x, (const float *)yd, (const float *)wp,
                      1e-6f, (const float *)wn, 1e-6f, hf, qa, dq, sq, E, 2,
                      (const u8 *)wq[(l + 1) % sets], pfq, nil, 0, nil, 0, nil, 0);
        } else {
            mv_lb<<<E / (4 * pw), 32 * pw, 0, st>>>(wd[s], E, yd, qo, dout, so, F, x, wp, wn, qa,
                                                    dq, sq, cnt + 16,
                                                    (const u8 *)wq[(l + 1) % sets], pf ? pfq : 0,
                                                    nil, 0, nil, 0, nil, 0);
        }
        mvq_one_q4k_lb5<<<Q / 16, 128, 0, st>>>(wq[(l + 1) % sets], Q, yq, qa, dq, sq, E);
    };

    // The same values: one layer of the engine's launches against the folded ones (the
    // residual, the down projection's output and the Q/K/V/gate-shaped one), from the same
    // residual and inputs.
    {
        std::vector<float> x0(E), yq0(Q), yd0(E), ra(Q), rb(Q), xa_(E), xb(E);
        CK(cudaMemcpy(x0.data(), x, E * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(yq0.data(), yq, Q * 4, cudaMemcpyDeviceToHost));
        for (int mode : {0, 2, 3, 4, 5}) {
            CK(cudaMemcpy(x, x0.data(), E * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(yq, yq0.data(), Q * 4, cudaMemcpyHostToDevice));
            fill_f32<<<64, 256>>>(xa, A, 8, -1.0f, 2.0f);
            layer(mode, 0);
            CK(cudaStreamSynchronize(st));
            CK(cudaGetLastError());
            std::vector<float> &q = mode == 0 ? ra : rb, &xx = mode == 0 ? xa_ : xb;
            CK(cudaMemcpy(q.data(), yq, Q * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(xx.data(), x, E * 4, cudaMemcpyDeviceToHost));
            if (mode == 0) continue;
            double nq = 0, dqq = 0, nx = 0, dx = 0;
            int bad = 0;
            for (int i = 0; i < Q; i++) {
                nq += (double)(ra[i] - rb[i]) * (ra[i] - rb[i]);
                dqq += (double)ra[i] * ra[i];
                bad += !std::isfinite(rb[i]);
            }
            for (int i = 0; i < E; i++) {
                nx += (double)(xa_[i] - xb[i]) * (xa_[i] - xb[i]);
                dx += (double)xa_[i] * xa_[i];
                bad += !std::isfinite(xb[i]);
            }
            printf("mode %d vs engine: residual NMSE %.3e, Q/K/V/gate-shaped output NMSE %.3e, %d non-finite\n",
                   mode, dx > 0 ? nx / dx : 0.0, dqq > 0 ? nq / dqq : 0.0, bad);
        }
    }

    const int L = 16;
    const char *names[] = {"engine: tails + L2-prefetch blocks, one-warp projections",
                           "engine, projections in 4-warp blocks",
                           "tails in the last block (4 warps), no prefetch",
                           "tails in the last block (4 warps), others prefetch",
                           "tails in the last block (8 warps), others prefetch",
                           "tails in the last block (2 warps), others prefetch"};
    const int NM = 6;
    cudaGraphExec_t ge[NM];
    for (int m = 0; m < NM; m++) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int l = 0; l < L; l++) layer(m, l);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge[m], g, 0));
        CK(cudaGraphDestroy(g));
    }
    for (int round = 0; round < 4; round++)
        for (int m = 0; m < NM; m++) {
            for (int w = 0; w < 3; w++) CK(cudaGraphLaunch(ge[m], st));
            const double ms = median_ms(st, 10, [&](int) { CK(cudaGraphLaunch(ge[m], st)); });
            CK(cudaGetLastError());
            printf("round %d %-58s %8.2f us per layer\n", round, names[m], ms * 1000.0 / L);
        }
    return 0;
}
#endif
