// chain: one decode token's kernel chain, reduced to its matvecs and three latency-bound
// kernels per layer, over 52 layers of distinct full-size Q4_K weights (14 GB, so every byte
// comes from DRAM), captured as one CUDA graph; built on the device with nvcc
// (`bash tools/bench/mvbw/run.sh OUT`). It measures what programmatic dependent launch (PDL)
// gives when each matvec issues its first loop trip's weight loads before
// `griddepcontrol.wait` (the weights do not depend on the previous kernel), against the
// plain graph and PDL with the wait at the start. Every variant's result is compared bit for
// bit with the plain one. The matvec is the engine's q4k_rows (mvq1.cu), its loop rotated.
#ifndef MVBW_DEVICE_ONLY
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#endif

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "../../../crates/muser-engine/src/cuda/kernels/mvq1.cu"
#include "bench.cuh"

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;"); }

// Timeline of one token (first block start, first wait release, last warp end per launch, in
// globaltimer nanoseconds), filled by every launch of the chain.
#define TL_MAX 400
__device__ unsigned long long g_tl[3 * TL_MAX];
__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// CHAIN_NO_TL (stage.cu): the kernels without the timeline's atomics (which slow the plain
// graph ~8 %).
#ifdef CHAIN_NO_TL
#define TL_START(ki)
#define TL_WAIT(ki)
#define TL_END(ki)
#else
#define TL_START(ki) if (threadIdx.x == 0) atomicMin(&g_tl[3 * (ki)], gtime())
#define TL_WAIT(ki) if ((threadIdx.x & 31) == 0) atomicMin(&g_tl[3 * (ki) + 1], gtime())
#define TL_END(ki) if ((threadIdx.x & 31) == 0) atomicMax(&g_tl[3 * (ki) + 2], gtime())
#endif



// q4k_rows with its loop rotated: trip t's weights are loaded at the end of trip t - 1 (the
// first before the loop), so the first loads can come before the PDL wait (WAIT = 1) or
// every trip's weights before a wait (WAIT = 2, a no-op after the first). Same arithmetic in
// the same order as q4k_rows.
template <int WAIT>
__device__ __forceinline__ void q4k_rows_r(const u8 *w, const signed char *qa, const float *da,
                                           const float *sa, float *y, int n_in, int n_out,
                                           int row0) {
    constexpr int RR = 4;
    Q4K_LANE(RR);
    uint4 hd[RR], q0[RR], q1[RR];
    int b = lane >> 2;
    auto load = [&](int bb) {
        Q4K_TRIP(RR, w, row0, n_out, row_bytes, bb, k, hd, q0, q1);
    };
    if (b < nb) load(b);
    if (WAIT >= 1) pdl_wait();
    while (b < nb) {
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++) {
            acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
        }
        b += 8;
        if (b < nb) load(b);
        if (WAIT == 2) pdl_wait();
    }
    Q4K_STORE(RR, acc, y, row0, n_out);
}

// q4k_rows's loop unchanged, the PDL wait after the weight loads: every trip (WAIT = 3; a
// no-op after the first) or the first trip only (WAIT = 4).
template <int WAIT>
__device__ __forceinline__ void q4k_rows_w(const u8 *w, const signed char *qa, const float *da,
                                           const float *sa, float *y, int n_in, int n_out,
                                           int row0) {
    constexpr int RR = 4;
    Q4K_LANE(RR);
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 hd[RR], q0[RR], q1[RR];
        Q4K_TRIP(RR, w, row0, n_out, row_bytes, b, k, hd, q0, q1);
        if (WAIT == 3 || (WAIT == 4 && b < 8)) pdl_wait();
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++) {
            acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
        }
    }
    Q4K_STORE(RR, acc, y, row0, n_out);
}

// MODE 0: the engine's q4k_rows, the wait (when PDL) at the start; 1, 2: q4k_rows_r<MODE>;
// 3, 4: q4k_rows_w<MODE>.
template <int MODE>
__device__ __forceinline__ void rows(const u8 *w, const signed char *qa, const float *da,
                                     const float *sa, float *y, int n_in, int n_out, int row0,
                                     bool first, int ki) {
    if (MODE == 0) {
        if (first) {
            pdl_wait();
            TL_WAIT(ki);
        }
        q4k_rows<4>(w, qa, da, sa, y, n_in, n_out, row0, 0, 1.0f, 0.0f);
    } else if (MODE >= 3) {
        if (first) q4k_rows_w<MODE>(w, qa, da, sa, y, n_in, n_out, row0);
        else q4k_rows<4>(w, qa, da, sa, y, n_in, n_out, row0, 0, 1.0f, 0.0f);
    } else if (first) {
        q4k_rows_r<MODE>(w, qa, da, sa, y, n_in, n_out, row0);
    } else {
        q4k_rows_r<0>(w, qa, da, sa, y, n_in, n_out, row0);
    }
}

template <int MODE>
__global__ void __launch_bounds__(128, 5)
    mv(const u8 *w, int n_out, int n_in, const signed char *qa, const float *da, const float *sa,
       float *y, int ki) {
    TL_START(ki);
    pdl_trigger();
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * 4;
    if (row0 >= n_out) return;
    rows<MODE>(w, qa, da, sa, y + row0, n_in, n_out, row0, true, ki);
    TL_END(ki);
}

template <int MODE>
__global__ void __launch_bounds__(128, 5)
    gu(const u8 *wg, const u8 *wu, int n_ff, const signed char *qa, const float *da,
       const float *sa, int n_in, signed char *qo, float *dout, float *so, int ki) {
    TL_START(ki);
    pdl_trigger();
    __shared__ float g[64];
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32;
#pragma unroll 1
    for (int p = 0; p < GU_PASSES; p++) {
        const int u = p * 4 + warp;
        rows<MODE>(u < 8 ? wg : wu, qa, da, sa, g + 4 * u, n_in, n_ff, r0 + 4 * (u & 7), p == 0, ki);
    }
    __syncthreads();
    if (warp == 0) {
        const int lane = threadIdx.x & 31;
        const float r = silu_mul(g[lane], g[32 + lane]);
        quant_block32(r, blockIdx.x, qo, dout, so);
    }
    TL_END(ki);
}

// (block_sum1024 is bench.cuh's. Until round u every warp but the first summed zeros in it, so
// the stand-ins scaled 31 of 32 warps' values by ~1,000: the graph variants agreed with each
// other bit for bit, not with the intended arithmetic; the timings are unaffected, the work
// being the same.)

// Latency-bound stand-ins (one block of 1,024 threads). lat_norm: x = x / 2 + tanh(y / 1000), then RMS-norm and
// int8-quantize x into (qa, da, sa) (the norm tail); lat_quant: int8-quantize y (the attention
// output's stand-in).
__global__ void __launch_bounds__(1024) lat_norm(const float *y, float *x, int n,
                                                  signed char *qa, float *da, float *sa, int ki) {
    TL_START(ki);
    pdl_trigger();
    pdl_wait();
    TL_WAIT(ki);
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += 1024) {
        const float v = 0.5f * x[i] + tanhf(y[i] * 1e-3f);
        x[i] = v;
        ss += v * v;
    }
    const float sc = rsqrtf(block_sum1024(ss) / n + 1e-6f);
    for (int b = threadIdx.x >> 5; b < n / 32; b += 32)
        quant_block32(x[b * 32 + (threadIdx.x & 31)] * sc, b, qa, da, sa);
    TL_END(ki);
}

__global__ void __launch_bounds__(1024) lat_quant(const float *y, int n, signed char *qa,
                                                   float *da, float *sa, int ki) {
    TL_START(ki);
    pdl_trigger();
    pdl_wait();
    TL_WAIT(ki);
    const float sc = rsqrtf(block_sum1024(threadIdx.x < n ? y[threadIdx.x] * y[threadIdx.x] : 0.f) + 1.f);
    for (int b = threadIdx.x >> 5; b < n / 32; b += 32)
        quant_block32(y[b * 32 + (threadIdx.x & 31)] * sc, b, qa, da, sa);
    TL_END(ki);
}


// ---- The same chain as one persistent kernel (one block of MW warps per SM, all resident),
// phases separated by grid barriers. Every block keeps the residual row x in shared memory
// and computes the norms and activation quantizations itself (the same values in every
// block), so the only grid-wide exchanges are the matvec outputs. Before a barrier each
// warp issues the first loop trip's weight loads of its first rows of the next matvec, so
// DRAM keeps streaming through the barrier and the per-block latency phases.

struct Pre {
    uint4 hd[4], q0[4], q1[4];
};

__device__ __forceinline__ void pre_load(Pre &p, const u8 *w, int n_in, int n_out, int row0) {
    const int lane = threadIdx.x & 31, k = lane & 3, b = lane >> 2;
    const size_t row_bytes = (size_t)(n_in >> 8) * 144;
    if (row0 >= n_out) return;
    Q4K_TRIP(4, w, row0, n_out, row_bytes, b, k, p.hd, p.q0, p.q1);
}

// q4k_rows<4> with its first trip's weights already in `p` (pre_load's), the rest loaded as
// q4k_rows does; the same arithmetic in the same order.
__device__ __forceinline__ void q4k_rows_p(const u8 *w, const signed char *qa, const float *da,
                                           const float *sa, float *y, int n_in, int n_out,
                                           int row0, const Pre &p) {
    constexpr int RR = 4;
    Q4K_LANE(RR);
    auto step = [&](int b, const uint4 *hd, const uint4 *q0, const uint4 *q1) {
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < RR; r++) {
            acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
        }
    };
    step(lane >> 2, p.hd, p.q0, p.q1);
    for (int b = (lane >> 2) + 8; b < nb; b += 8) {
        uint4 hd[RR], q0[RR], q1[RR];
        Q4K_TRIP(RR, w, row0, n_out, row_bytes, b, k, hd, q0, q1);
        step(b, hd, q0, q1);
    }
    Q4K_STORE(RR, acc, y, row0, n_out);
}

// Grid barrier: every block's thread 0 counts itself in and waits for the target (the
// counter only grows during a token; the host zeroes it before each).
// Thread 0's part (also stage.cu's): count in, then wait until the counter reaches target.
__device__ __forceinline__ void grid_count_wait(unsigned *ctr, unsigned target) {
    __threadfence();
    atomicAdd(ctr, 1u);
    unsigned v;
    do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
    } while (v < target);
}

__device__ __forceinline__ void gsync(unsigned *ctr, unsigned &target) {
    __syncthreads();
    target += gridDim.x;
    if (threadIdx.x == 0) grid_count_wait(ctr, target);
    __syncthreads();
}

template <int MW>
__device__ float bsum(float v, float *red) {
    v = warp_sum(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float t = 0.0f;
    for (int i = 0; i < MW; i++) t += red[i];
    return t;
}

// One matvec phase: 4-row units over every warp of the grid, the warp's first unit from `p`.
template <int MW>
__device__ __forceinline__ void mv_phase(const u8 *w, int n_out, int n_in, const signed char *qa,
                                         const float *da, const float *sa, float *y, const Pre &p) {
    const int gw = blockIdx.x * MW + (threadIdx.x >> 5), nw = gridDim.x * MW;
    if (gw * 4 >= n_out) return;
    q4k_rows_p(w, qa, da, sa, y + 4 * gw, n_in, n_out, 4 * gw, p);
    for (int u = gw + nw; u * 4 < n_out; u += nw)
        q4k_rows<4>(w, qa, da, sa, y + 4 * u, n_in, n_out, 4 * u, 0, 1.0f, 0.0f);
}

struct MegaArgs {
    const u8 *W;
    size_t per, s_qkvg, s_o, s_f;
    float *x_out, *y1, *y2, *y3;
    signed char *qh;
    float *dh, *sh;
    unsigned *ctr;
    int L;
};

// Phase marks of the persistent kernel: the latest block to reach mark m of layer l.
#define MARK(m)                                                                               \
    do {                                                                                       \
        __syncthreads();                                                                       \
        if (threadIdx.x == 0) atomicMax(&g_tl[11 * l + (m)], gtime());                         \
    } while (0)

// The persistent kernel's norm tail stand-in (every block the whole row): x = 0.5 x +
// tanh(y / 1000) (y null: no residual term), RMS-norm, int8 into qa / da / sa.
template <int MW>
__device__ __forceinline__ void mega_norm(float *x, const float *y, int E, float *red,
                                          signed char *qa, float *da, float *sa) {
    constexpr int MT = MW * 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < E; i += MT) {
        const float v = 0.5f * x[i] + (y ? tanhf(__ldcg(y + i) * 1e-3f) : 0.0f);
        x[i] = v;
        ss += v * v;
    }
    const float sc = rsqrtf(bsum<MW>(ss, red) / E + 1e-6f);
    for (int b = warp; b < E / 32; b += MW) quant_block32(x[b * 32 + lane] * sc, b, qa, da, sa);
    __syncthreads();
}

template <int MW>
__global__ void __launch_bounds__(MW * 32, 1) mega(MegaArgs A) {
    constexpr int MT = MW * 32;
    extern __shared__ float sm[];
    const int E = 6656, F = 19968, QKVG = 8704, QD = 4096;
    float *x = sm;                                  // [E]
    float *da = x + E, *sa = da + F / 32;           // [F / 32] each
    float *red = sa + F / 32;                       // [32]
    float *gu_s = red + 32;                         // [64]
    signed char *qa = (signed char *)(gu_s + 64);   // [F]
    const int gw = blockIdx.x * MW + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned target = 0;
    for (int i = threadIdx.x; i < E; i += MT) x[i] = 1.0f;
    Pre p;
    pre_load(p, A.W, E, QKVG, 4 * gw);
    for (int l = 0; l < A.L; l++) {
        const u8 *w = A.W + A.per * l;
        // norm tail: x += y3 (zero before the first layer), RMS-norm, int8 into qa.
        mega_norm<MW>(x, l > 0 ? A.y3 : nullptr, E, red, qa, da, sa);
        MARK(0);
        mv_phase<MW>(w, QKVG, E, qa, da, sa, A.y1, p);
        MARK(1);
        pre_load(p, w + A.s_qkvg, QD, E, 4 * gw);
        gsync(A.ctr, target);
        MARK(2);
        // attention stand-in: y1[0 .. QD) scaled and quantized.
        {
            float s2 = 0.0f;
            for (int i = threadIdx.x; i < 1024; i += MT) s2 += __ldcg(A.y1 + i) * __ldcg(A.y1 + i);
            const float sc = rsqrtf(bsum<MW>(s2, red) + 1.f);
            for (int b = warp; b < QD / 32; b += MW) quant_block32(__ldcg(A.y1 + b * 32 + lane) * sc, b, qa, da, sa);
            __syncthreads();
        }
        MARK(3);
        mv_phase<MW>(w + A.s_qkvg, E, QD, qa, da, sa, A.y2, p);
        MARK(4);
        pre_load(p, w + A.s_qkvg + A.s_o + (warp < 8 ? 0 : A.s_f), E, F, blockIdx.x * 32 + 4 * (warp & 7));
        gsync(A.ctr, target);
        MARK(5);
        mega_norm<MW>(x, A.y2, E, red, qa, da, sa);
        MARK(6);
        // gate and up in 32-row groups, one per block per round: warps 0-15 take the group's
        // 16 units of 4 rows (0-7 gate, 8-15 up), warp 0 then writes its SwiGLU, quantized.
        {
            const u8 *wg = w + A.s_qkvg + A.s_o, *wu = wg + A.s_f;
            for (int grp = blockIdx.x; grp < F / 32; grp += gridDim.x) {
                if (warp < 16) {
                    const int r0 = grp * 32 + 4 * (warp & 7);
                    if (grp == blockIdx.x)
                        q4k_rows_p(warp < 8 ? wg : wu, qa, da, sa, gu_s + 4 * warp, E, F, r0, p);
                    else
                        q4k_rows<4>(warp < 8 ? wg : wu, qa, da, sa, gu_s + 4 * warp, E, F, r0, 0,
                                    1.0f, 0.0f);
                }
                __syncthreads();
                if (warp == 0) quant_block32(silu_mul(gu_s[lane], gu_s[32 + lane]), grp, A.qh, A.dh, A.sh);
                __syncthreads();
            }
        }
        MARK(7);
        pre_load(p, w + A.s_qkvg + A.s_o + 2 * A.s_f, F, E, 4 * gw);
        gsync(A.ctr, target);
        MARK(8);
        // The SwiGLU row (written by every block) into shared memory, read past L1.
        for (int i = threadIdx.x; i < F / 16; i += MT)
            ((uint4 *)qa)[i] = __ldcg((const uint4 *)A.qh + i);
        for (int i = threadIdx.x; i < F / 32; i += MT) {
            da[i] = __ldcg(A.dh + i);
            sa[i] = __ldcg(A.sh + i);
        }
        __syncthreads();
        mv_phase<MW>(w + A.s_qkvg + A.s_o + 2 * A.s_f, E, F, qa, da, sa, A.y3, p);
        MARK(9);
        if (l + 1 < A.L) pre_load(p, w + A.per, E, QKVG, 4 * gw);
        gsync(A.ctr, target);
        MARK(10);
    }
    if (blockIdx.x == 0)
        for (int i = threadIdx.x; i < E; i += MT) A.x_out[i] = x[i];
}

#ifndef MVBW_DEVICE_ONLY

template <typename K, typename... A>
static void launch(cudaStream_t st, bool pdl, K kern, int grid, int block, A... args) {
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(grid);
    c.blockDim = dim3(block);
    c.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    c.attrs = at;
    c.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&c, kern, args...));
}

// The persistent kernels' phase marks (11 per layer: the latest block at each, in
// nanoseconds) as the mean time of each phase over layers 4 .. L - 5 (stage.cu's too).
static void print_phases(const unsigned long long *t, int L) {
    const char *nm[11] = {"norm", "qkvg mv", "barrier", "attn quant", "o mv", "barrier",
                          "norm", "gate/up", "barrier", "down mv", "barrier"};
    printf("  phases (us, latest block to latest block, layers 4 .. L - 5):\n");
    for (int m = 0; m < 11; m++) {
        double d = 0;
        int n = 0;
        for (int l = 4; l < L - 4; l++) {
            const double prev = m == 0 ? (double)t[11 * (l - 1) + 10] : (double)t[11 * l + m - 1];
            d += ((double)t[11 * l + m] - prev) * 1e-3;
            n++;
        }
        printf("  %-12s %7.2f\n", nm[m], d / n);
    }
}

// The chain's geometry (the real model's), its weights (per layer Q/K/V/gate, output, FFN
// gate, up and down, all random Q4_K, 14 GB: DRAM-cold) and activation buffers (stage.cu's too).
struct Chain {
    static constexpr int L = 52, E = 6656, F = 19968, QKVG = 4096 + 256 + 256 + 4096, QD = 4096;
    size_t s_qkvg, s_o, s_f, per;
    u8 *W;
    float *x, *y1, *y2, *y3;
    signed char *qa[4];
    float *da[4], *sa[4];
};

static Chain chain_alloc() {
    Chain c;
    const int L = Chain::L, E = Chain::E, F = Chain::F, QKVG = Chain::QKVG, QD = Chain::QD;
    c.s_qkvg = (size_t)QKVG * (E / 256) * 144;
    c.s_o = (size_t)E * (QD / 256) * 144;
    c.s_f = (size_t)F * (E / 256) * 144;  // the down projection: as large
    c.per = c.s_qkvg + c.s_o + 3 * c.s_f;
    CK(cudaMalloc(&c.W, c.per * L));
    fill_q4k<<<4096, 256>>>(c.W, c.per * L / 144, 3);
    CK(cudaMalloc(&c.x, E * 4));
    CK(cudaMalloc(&c.y1, QKVG * 4));
    CK(cudaMalloc(&c.y2, E * 4));
    CK(cudaMalloc(&c.y3, E * 4));
    for (int i = 0; i < 4; i++) {
        CK(cudaMalloc(&c.qa[i], F));
        CK(cudaMalloc(&c.da[i], F / 32 * 4));
        CK(cudaMalloc(&c.sa[i], F / 32 * 4));
    }
    CK(cudaDeviceSynchronize());
    return c;
}

// Layer l's seven launches: the norm stand-in, Q/K/V/gate, the attention stand-in, the output
// projection, the norm stand-in, gate/up + SwiGLU, down (PDL on the latency-bound kernels with
// pdl, on the matvecs with pmv; timeline indices k0 .. k0 + 6).
template <typename MV, typename GU>
static void chain_layer(const Chain &c, cudaStream_t st, int l, bool pdl, bool pmv, MV mvk, GU guk,
                        int k0) {
    const int E = Chain::E, F = Chain::F, QKVG = Chain::QKVG, QD = Chain::QD;
    const u8 *w = c.W + c.per * l;
    const size_t s_qkvg = c.s_qkvg, s_o = c.s_o, s_f = c.s_f;
    float *x = c.x, *y1 = c.y1, *y2 = c.y2, *y3 = c.y3;
    signed char *const *qa = c.qa;
    float *const *da = c.da, *const *sa = c.sa;
    launch(st, pdl, lat_norm, 1, 1024, (const float *)y3, x, E, qa[0], da[0], sa[0], k0);
    launch(st, pmv, mvk, QKVG / 16, 128, w, QKVG, E, (const signed char *)qa[0],
           (const float *)da[0], (const float *)sa[0], y1, k0 + 1);
    launch(st, pdl, lat_quant, 1, 1024, (const float *)y1, QD, qa[1], da[1], sa[1], k0 + 2);
    launch(st, pmv, mvk, E / 16, 128, w + s_qkvg, E, QD, (const signed char *)qa[1],
           (const float *)da[1], (const float *)sa[1], y2, k0 + 3);
    launch(st, pdl, lat_norm, 1, 1024, (const float *)y2, x, E, qa[2], da[2], sa[2], k0 + 4);
    launch(st, pmv, guk, F / 32, 128, w + s_qkvg + s_o, w + s_qkvg + s_o + s_f, F,
           (const signed char *)qa[2], (const float *)da[2], (const float *)sa[2], E, qa[3], da[3],
           sa[3], k0 + 5);
    launch(st, pmv, mvk, E / 16, 128, w + s_qkvg + s_o + 2 * s_f, E, F, (const signed char *)qa[3],
           (const float *)da[3], (const float *)sa[3], y3, k0 + 6);
}

// `enqueue(st)` captured as a graph, run once from x = 1, y3 = 0 (on the graph's stream: it
// does not wait for the legacy default stream); x after it into `out`. Returns the instance.
template <typename Enqueue>
static cudaGraphExec_t chain_graph(const Chain &c, cudaStream_t st, Enqueue enqueue,
                                   std::vector<float> &out) {
    const std::vector<float> ones(Chain::E, 1.0f);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    enqueue(st);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphDestroy(g));
    CK(cudaMemcpyAsync(c.x, ones.data(), Chain::E * 4, cudaMemcpyHostToDevice, st));
    CK(cudaMemsetAsync(c.y3, 0, Chain::E * 4, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    out.resize(Chain::E);
    CK(cudaMemcpy(out.data(), c.x, Chain::E * 4, cudaMemcpyDeviceToHost));
    return ge;
}

#ifndef CHAIN_NO_MAIN
int main() {
    const Chain c = chain_alloc();
    const int L = Chain::L, E = Chain::E, F = Chain::F;
    const size_t s_qkvg = c.s_qkvg, s_o = c.s_o, s_f = c.s_f, per = c.per;
    u8 *W = c.W;
    float *y1 = c.y1, *y2 = c.y2, *y3 = c.y3;
    signed char *const *qa = c.qa;
    float *const *da = c.da, *const *sa = c.sa;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    // pdl 0: plain edges; 1: every kernel launched with PDL; 2: only the matvecs (the latency
    // kernels wait for their predecessor as in the plain graph).
    auto token = [&](int pdl_mode, auto mvk, auto guk) {
        const bool pdl = pdl_mode == 1, pmv = pdl_mode >= 1;
        for (int l = 0; l < L; l++) chain_layer(c, st, l, pdl, pmv, mvk, guk, 7 * l);
    };
    const double bytes = (double)per * L;
    std::vector<float> ref;
    auto run = [&](const char *name, int pdl, auto mvk, auto guk) {
        // Deterministic start: x = 1, y3 = 0.
        std::vector<float> out;
        cudaGraphExec_t ge = chain_graph(c, st, [&](cudaStream_t) { token(pdl, mvk, guk); }, out);
        int diff = 0;
        if (ref.empty()) ref = out;
        for (int i = 0; i < E; i++) diff += memcmp(&out[i], &ref[i], 4) != 0;
        const double ms = median_ms(st, 10, [&](int) { CK(cudaGraphLaunch(ge, st)); });
        // One more replay with the timeline reset: per launch of a layer (averaged over layers
        // 4 .. L - 5), the gap from the previous launch's last warp to its first block, the
        // wait release after that end, and its span (first block to last warp).
        {
            std::vector<unsigned long long> tl(3 * TL_MAX);
            for (int i = 0; i < TL_MAX; i++) {
                tl[3 * i] = ~0ull;
                tl[3 * i + 1] = ~0ull;
                tl[3 * i + 2] = 0;
            }
            CK(cudaMemcpyToSymbol(g_tl, tl.data(), tl.size() * 8));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyFromSymbol(tl.data(), g_tl, tl.size() * 8));
            const char *names[7] = {"norm", "qkvg", "attn", "o", "norm", "gate/up", "down"};
            printf("  timeline (us): launch  gap-before  wait-after-prev-end  span\n");
            for (int c = 0; c < 7; c++) {
                double gap = 0, wt = 0, span = 0;
                int n = 0, nw = 0;
                for (int l = 4; l < L - 4; l++) {
                    const int i = 7 * l + c;
                    const double pe = (double)tl[3 * (i - 1) + 2];
                    gap += ((double)tl[3 * i] - pe) * 1e-3;
                    span += ((double)tl[3 * i + 2] - (double)tl[3 * i]) * 1e-3;
                    if (tl[3 * i + 1] != ~0ull) {
                        wt += ((double)tl[3 * i + 1] - pe) * 1e-3;
                        nw++;
                    }
                    n++;
                }
                printf("  %-8s %8.2f %8.2f %8.2f\n", names[c], gap / n, nw ? wt / nw : 0.0, span / n);
            }
            printf("  token span %.3f ms\n", ((double)tl[3 * (7 * L - 1) + 2] - (double)tl[0]) * 1e-6);
        }
        printf("%-40s %7.3f ms/token  %7.1f GB/s  (%.1f us/layer)  %d of %d differ from the first\n",
               name, ms, bytes / ms * 1e-6, ms * 1000 / L, diff, E);
        CK(cudaGraphExecDestroy(ge));
    };
    printf("weights %.2f GB per token (%d layers), at 4.5 TB/s: %.3f ms\n", bytes * 1e-9, L,
           bytes / 4.5e12 * 1e3);
    unsigned *ctr;
    float *g, *u, *xo;
    CK(cudaMalloc(&ctr, 4));
    CK(cudaMalloc(&g, F * 4));
    CK(cudaMalloc(&u, F * 4));
    CK(cudaMalloc(&xo, E * 4));
    auto run_mega = [&](const char *name, auto kern, int mw) {
        const size_t smem = (size_t)E * 4 + 2 * (F / 32) * 4 + 96 * 4 + F;
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int per_sm = 0, sms = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, mw * 32, smem));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        if (per_sm < 1) {
            printf("%s: does not fit\n", name);
            return;
        }
        MegaArgs a = {W, per, s_qkvg, s_o, s_f, xo, y1, y2, y3, qa[3], da[3], sa[3], ctr, L};
        auto once = [&]() {
            CK(cudaMemsetAsync(ctr, 0, 4, st));
            kern<<<sms, mw * 32, smem, st>>>(a);
        };
        once();
        CK(cudaStreamSynchronize(st));
        CK(cudaGetLastError());
        std::vector<float> out(E);
        CK(cudaMemcpy(out.data(), xo, E * 4, cudaMemcpyDeviceToHost));
        double md = 0, mx = 0;
        for (int i = 0; i < E; i++) {
            md = std::max(md, (double)fabsf(out[i] - ref[i]));
            mx = std::max(mx, (double)fabsf(ref[i]));
        }
        const double ms = median_ms(st, 10, [&](int) { once(); });
        printf("%-40s %7.3f ms/token  %7.1f GB/s  (%.1f us/layer)  max |dx| %.3g of max |x| %.3g (%d blocks)\n",
               name, ms, bytes / ms * 1e-6, ms * 1000 / L, md, mx, sms);
        {
            std::vector<unsigned long long> tl(3 * TL_MAX, 0);
            CK(cudaMemcpyToSymbol(g_tl, tl.data(), tl.size() * 8));
            once();
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyFromSymbol(tl.data(), g_tl, tl.size() * 8));
            print_phases(tl.data(), L);
        }
    };
    for (int round = 0; round < 1; round++) {
        run("plain graph", 0, mv<0>, gu<0>);
        run("PDL all, wait at start", 1, mv<0>, gu<0>);
        run("PDL matvecs, wait at start", 2, mv<0>, gu<0>);
        run("PDL matvecs, wait in first trip", 2, mv<4>, gu<4>);
        run_mega("persistent, 16 warps per SM", mega<16>, 16);
    }
    return 0;
}
#endif  // CHAIN_NO_MAIN
#endif
