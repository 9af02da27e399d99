// normfold: the norm tail between two matvecs folded into the second matvec's launch as a
// prologue, so that a layer launches two kernels fewer. The consumer runs in thread-block
// clusters of NC; each cluster computes the whole norm tail (post-norm residual, the next norm,
// the int8 row) with its blocks taking n / NC values each and the row sums exchanged through
// distributed shared memory (as the engine's norm_tail_q8_cl1), then copies the other blocks'
// int8 values into its own shared memory and runs the matvec from there. Cluster 0 writes the
// new residual (to the other of two buffers: the other clusters still read the old one).
// Optionally each warp first asks L2 for its first loop trips' weights, so DRAM streams while
// the prologue waits on its latency. Compared, as a CUDA graph of L layers over DRAM-cold
// weights (a Q/K/V/gate-shaped matvec of 8,704 x 6,656, the flat FFN gate/up, the down
// projection), with the engine's separate norm tail launches (with their L2-prefetch blocks).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT normfold
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
#include "bench.cuh"

// The engine's norm tail with L2-prefetch blocks (prefetch.cu's NORM_TAIL_PF, ONE = true).
extern "C" __global__ void __launch_bounds__(1024)
    nt_cl1_pf(float *x, const float *o, const float *wp, float eps_post, const float *wn,
              float eps, float *h, signed char *qa, float *da, float *sa, int n, int mode,
              PF_ARGS) {
    if (blockIdx.x >= NC_BLOCKS) {
        prefetch_ranges(PF_PASS, blockIdx.x - NC_BLOCKS, gridDim.x - NC_BLOCKS);
        return;
    }
    norm_tail_cl<true>(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode);
}

__device__ __forceinline__ u32 cl_rank() {
    u32 r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 cl_id() {
    u32 r;
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
// The row in shared memory (int8 values and their block scales d, d·Σq).
struct __align__(16) Row {
    signed char q[6656];
    float d[208], s[208];
};

// The norm tail (mode 2 of norm_tail_cl<true>) as a cluster prologue: x' = x + norm(o)·wp,
// h = norm(x')·wn, h into row (every block ends with the whole row). Blocks of 128 threads,
// 8 values per thread per chunk, at most two chunks per thread (n / NC ≤ 2,048).
// The engine's exchange before 2026-12-02 (pull: each block's slot read by the others after a
// release/acquire cluster barrier), which this benchmark's folded norm keeps.
// `dsmem_ld` of four floats (p 16-byte aligned).
__device__ __forceinline__ float4 dsmem_ld4(const float4 *p, u32 rank) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(shared_u32(p)), "r"(rank));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(r)
                 : "memory");
#endif
    return v;
}

// Four cluster-wide sums at once over a cluster of NC blocks (every thread of every block gets
// them, the same bits in every block: each block's sums in its slot, read in rank order).
template <int NC = NC_BLOCKS>
__device__ __forceinline__ float4 cluster_sum4_pull(float4 v, float4 *sh4, float4 *slot) {
    const float4 b = block_sum4(v, sh4);
    if (threadIdx.x == 0) *slot = b;
    cluster_sync_all();
    float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (u32 r = 0; r < NC; r++) {
        const float4 c = dsmem_ld4(slot, r);
        t.x += c.x;
        t.y += c.y;
        t.z += c.z;
        t.w += c.w;
    }
    return t;
}

template <int NC>
__device__ __forceinline__ void norm_pro(const float *x, const float *o, const float *wp,
                                         float eps_post, const float *wn, float eps,
                                         float *x_out, int n, Row &row) {
    __shared__ float4 sh4[4];
    __shared__ float4 slot4;
    const u32 rank = cl_rank();
    const int per = n / NC, chunks = per / 8, base = rank * per;
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    float xv[2][8], ov[2][8], pv[2][8];
    float4 p = z;
#pragma unroll
    for (int m = 0; m < 2; m++) {
        const int c = threadIdx.x + 128 * m, i0 = base + 8 * c;
        const bool on = c < chunks;
        const float4 a = on ? *(const float4 *)(x + i0) : z, b = on ? *(const float4 *)(x + i0 + 4) : z;
        const float4 e = on ? *(const float4 *)(o + i0) : z, f = on ? *(const float4 *)(o + i0 + 4) : z;
        const float4 g = on ? *(const float4 *)(wp + i0) : z, hh = on ? *(const float4 *)(wp + i0 + 4) : z;
        const float xa[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float oa[8] = {e.x, e.y, e.z, e.w, f.x, f.y, f.z, f.w};
        const float pa[8] = {g.x, g.y, g.z, g.w, hh.x, hh.y, hh.z, hh.w};
#pragma unroll
        for (int k = 0; k < 8; k++) {
            xv[m][k] = xa[k];
            ov[m][k] = oa[k];
            pv[m][k] = pa[k];
            const float op = __fmul_rn(oa[k], pa[k]);
            p.x = __fmaf_rn(oa[k], oa[k], p.x);
            p.y = __fmaf_rn(xa[k], xa[k], p.y);
            p.z = __fmaf_rn(xa[k], op, p.z);
            p.w = __fmaf_rn(op, op, p.w);
        }
    }
    const float4 t = cluster_sum4_pull<NC>(p, sh4, &slot4);
    const float scale = rsqrtf(t.x / n + eps_post);
    const float v = t.y + scale * (2.0f * t.z + scale * t.w);
    const float scale2 = rsqrtf((v < 0.0f ? 0.0f : v) / n + eps);
    const bool writer = cl_id() == 0;
#pragma unroll
    for (int m = 0; m < 2; m++) {
        const int c = threadIdx.x + 128 * m, i0 = base + 8 * c;
        const bool on = c < chunks;
        float hv[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            xv[m][k] += ov[m][k] * scale * pv[m][k];
            hv[k] = xv[m][k] * scale2 * (on ? wn[i0 + k] : 0.0f);
        }
        if (writer && on) {
            *(float4 *)(x_out + i0) = make_float4(xv[m][0], xv[m][1], xv[m][2], xv[m][3]);
            *(float4 *)(x_out + i0 + 4) = make_float4(xv[m][4], xv[m][5], xv[m][6], xv[m][7]);
        }
        store_q8(hv, row.q, row.d, row.s, i0, on);
    }
    cluster_sync_all();
    for (int i = threadIdx.x; i < n / 16; i += blockDim.x) {
        const u32 owner = (u32)(i * 16 / per);
        if (owner != rank) ((float4 *)row.q)[i] = dsmem_ld4((const float4 *)(row.q + i * 16), owner);
    }
    for (int i = threadIdx.x; i < n / 32; i += blockDim.x) {
        const u32 owner = (u32)(i * 32 / per);
        if (owner != rank) {
            row.d[i] = dsmem_ld(&row.d[i], owner);
            row.s[i] = dsmem_ld(&row.s[i], owner);
        }
    }
    __syncthreads();
}

// L2 prefetch of TRIPS loop trips of 4 rows from row0 (row_bytes each), 8 super-blocks a trip.
template <int TRIPS>
__device__ __forceinline__ void pf_rows(const u8 *w, size_t row_bytes, int row0) {
    const int lane = threadIdx.x & 31;
    const int lines = TRIPS > 0 ? (TRIPS * 1152 + 127) / 128 : 1;
    if (TRIPS == 0) return;
    for (int i = lane; i < 4 * lines; i += 32)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(w + (size_t)(row0 + i / lines) * row_bytes +
                                                      (size_t)(i % lines) * 128));
}

// A Q4_K matvec (q4k_rows<4>, 4 rows per warp) behind the folded norm.
template <int NC, int PRE>
__global__ void __launch_bounds__(128, 5)
    mv_pro(const u8 *w, int n_out, float *y, const float *x, const float *o, const float *wp,
           const float *wn, float *x_out, int n_in) {
    __shared__ Row row;
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * 4;
    if (PRE && row0 < n_out) pf_rows<PRE>(w, (size_t)(n_in >> 8) * 144, row0);
    norm_pro<NC>(x, o, wp, 1e-6f, wn, 1e-6f, x_out, n_in, row);
    if (row0 < n_out)
        q4k_rows<4>(w, row.q, row.d, row.s, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);
    cluster_sync_all();
}

// The flat FFN gate/up launch behind the folded norm.
template <int NC, int PRE>
__global__ void __launch_bounds__(128, 5)
    gu_pro(const u8 *wg, const u8 *wu, int n_ff, float *h, const float *x, const float *o,
           const float *wp, const float *wn, float *x_out, int n_in, signed char *qo, float *dout,
           float *so) {
    __shared__ Row row;
    if (PRE) pf_rows<PRE>(wg, (size_t)(n_in >> 8) * 144, blockIdx.x * 32 + 4 * (threadIdx.x >> 5));
    norm_pro<NC>(x, o, wp, 1e-6f, wn, 1e-6f, x_out, n_in, row);
    gu_swiglu_flat<false>(wg, wu, n_ff, h, row.q, row.d, row.s, n_in, qo, dout, so);
    cluster_sync_all();
}

#ifndef MVBW_DEVICE_ONLY
__global__ void fill_f32(float *p, int n, u32 seed, float lo, float span) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = lo + span * (float)(hash32(i, seed) & 0xFFFF) / 65536.0f;
}

int main() {
    const int E = 6656, F = 19968, Q = 8704, nbE = E / 256, nbF = F / 256;
    const size_t mq = (size_t)Q * nbE * 144, mg = (size_t)F * nbE * 144, md = (size_t)E * nbF * 144;
    const int sets = 4;  // 4 x 257 MB
    std::vector<u8 *> wq(sets), wg(sets), wu(sets), wd(sets);
    for (int s = 0; s < sets; s++) {
        CK(cudaMalloc(&wq[s], mq));
        CK(cudaMalloc(&wg[s], mg));
        CK(cudaMalloc(&wu[s], mg));
        CK(cudaMalloc(&wd[s], md));
        fill_q4k<<<1024, 256>>>(wq[s], mq / 144, 41 + 4 * s);
        fill_q4k<<<1024, 256>>>(wg[s], mg / 144, 42 + 4 * s);
        fill_q4k<<<1024, 256>>>(wu[s], mg / 144, 43 + 4 * s);
        fill_q4k<<<1024, 256>>>(wd[s], md / 144, 44 + 4 * s);
    }
    float *x[2], *yq, *yd, *h, *hf, *wp, *wn, *dq, *sq, *dout, *so;
    signed char *qa, *qo;
    for (auto &b : x) CK(cudaMalloc(&b, E * 4));
    CK(cudaMalloc(&yq, Q * 4));
    CK(cudaMalloc(&yd, E * 4));
    CK(cudaMalloc(&h, F * 4));
    CK(cudaMalloc(&hf, E * 4));
    CK(cudaMalloc(&wp, E * 4));
    CK(cudaMalloc(&wn, E * 4));
    CK(cudaMalloc(&qa, E));
    CK(cudaMalloc(&dq, E / 32 * 4));
    CK(cudaMalloc(&sq, E / 32 * 4));
    CK(cudaMalloc(&qo, F));
    CK(cudaMalloc(&dout, F / 32 * 4));
    CK(cudaMalloc(&so, F / 32 * 4));
    fill_f32<<<64, 256>>>(wp, E, 3, 0.5f, 1.0f);
    fill_f32<<<64, 256>>>(wn, E, 4, 0.5f, 1.0f);
    fill_f32<<<64, 256>>>(yd, E, 5, -1.0f, 2.0f);
    fill_f32<<<64, 256>>>(yq, Q, 6, -1.0f, 2.0f);
    CK(cudaDeviceSynchronize());
    const int qgrid = Q / 16, ggrid = F / 32, dgrid = E / 16;
    printf("max active clusters: Q/K/V/gate-shaped, 8: %d of %d; gate/up, 4: %d of %d; gate/up, 8: %d of %d\n",
           max_clusters(mv_pro<8, 0>, qgrid, 128, 8), qgrid / 8,
           max_clusters(gu_pro<4, 0>, ggrid, 128, 4), ggrid / 4,
           max_clusters(gu_pro<8, 0>, ggrid, 128, 8), ggrid / 8);

    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    // One layer in `mode`: 0 the engine's (norm tails with prefetch blocks as their own
    // launches), 1 both norms folded, 2 both folded with 1 trip prefetched, 3 with 2 trips,
    // 4 only the Q/K/V/gate one folded (1 trip), 5 the engine's without prefetch blocks.
    auto layer = [&](int mode, int l) {
        const int s = l % sets;
        const int pfq = (int)(mq / 5), pfg = (int)(mg * 6 / 100);
        if (mode == 0 || mode == 5) {
            const int blocks = mode == 0 ? 24 : 8;
            launch_cl(st, nt_cl1_pf, blocks, 1024, 8, x[0], (const float *)yd, (const float *)wp, 1e-6f,
                      (const float *)wn, 1e-6f, hf, qa, dq, sq, E, 2, (const u8 *)wq[s], mode == 0 ? pfq : 0,
                      (const u8 *)nullptr, 0, (const u8 *)nullptr, 0, (const u8 *)nullptr, 0);
            mvq_one_q4k_lb5<<<qgrid, 128, 0, st>>>(wq[s], Q, yq, qa, dq, sq, E);
        } else {
            typedef void (*MvPro)(const u8 *, int, float *, const float *, const float *,
                                  const float *, const float *, float *, int);
            const MvPro k = mode == 1 ? mv_pro<8, 0> : mode == 3 ? mv_pro<8, 2> : mv_pro<8, 1>;
            launch_cl(st, k, qgrid, 128, 8, (const u8 *)wq[s], Q, yq, (const float *)x[0],
                      (const float *)yd, (const float *)wp, (const float *)wn, x[1], E);
        }
        // The second norm reads the first E values of yq as its o.
        const int xb = (mode == 0 || mode == 5) ? 0 : 1;
        if (mode == 0 || mode == 5 || mode == 4) {
            const int blocks = mode == 0 || mode == 4 ? 24 : 8;
            launch_cl(st, nt_cl1_pf, blocks, 1024, 8, x[xb], (const float *)yq, (const float *)wp, 1e-6f,
                      (const float *)wn, 1e-6f, hf, qa, dq, sq, E, 2, (const u8 *)wg[s], mode == 5 ? 0 : pfg,
                      (const u8 *)wu[s], mode == 5 ? 0 : pfg, (const u8 *)nullptr, 0, (const u8 *)nullptr, 0);
            mvq_gu_swiglu_flat<<<ggrid, 128, 0, st>>>(wg[s], wu[s], F, h, qa, dq, sq, E, qo, dout, so);
        } else {
            typedef void (*GuPro)(const u8 *, const u8 *, int, float *, const float *,
                                  const float *, const float *, const float *, float *, int,
                                  signed char *, float *, float *);
            const GuPro k = mode == 1 ? gu_pro<4, 0> : mode == 2 ? gu_pro<4, 1> : gu_pro<4, 2>;
            launch_cl(st, k, ggrid, 128, 4, (const u8 *)wg[s], (const u8 *)wu[s], F, h,
                      (const float *)x[1], (const float *)yq, (const float *)wp,
                      (const float *)wn, x[0], E, qo, dout, so);
        }
        mvq_one_q4k_lb5<<<dgrid, 128, 0, st>>>(wd[s], E, yd, qo, dout, so, F);
    };

    // The same values: one layer of the engine's launches against the folded ones (the Q/K/V/
    // gate-shaped output and the down projection's), from the same residual.
    {
        std::vector<float> x0(E), ra(Q), rb(Q), da_(E), db(E);
        CK(cudaMemcpy(x0.data(), x[0], E * 4, cudaMemcpyDeviceToHost));
        for (int mode : {0, 1, 3, 4}) {
            CK(cudaMemcpy(x[0], x0.data(), E * 4, cudaMemcpyHostToDevice));
            fill_f32<<<64, 256>>>(yd, E, 5, -1.0f, 2.0f);
            layer(mode, 0);
            CK(cudaStreamSynchronize(st));
            CK(cudaGetLastError());
            std::vector<float> &q = mode == 0 ? ra : rb, &d = mode == 0 ? da_ : db;
            CK(cudaMemcpy(q.data(), yq, Q * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(d.data(), yd, E * 4, cudaMemcpyDeviceToHost));
            if (mode == 0) continue;
            int dq_ = 0, dd = 0;
            double mx = 0, num = 0, den = 0;
            for (int i = 0; i < Q; i++) dq_ += memcmp(&ra[i], &rb[i], 4) != 0;
            for (int i = 0; i < E; i++) {
                dd += memcmp(&da_[i], &db[i], 4) != 0;
                num += (double)(da_[i] - db[i]) * (da_[i] - db[i]);
                den += (double)da_[i] * da_[i];
                mx = std::max(mx, (double)fabsf(da_[i] - db[i]));
            }
            printf("mode %d vs engine: Q/K/V/gate-shaped %d of %d differ in bits; down %d of %d (NMSE %.3e, max |diff| %.3g)\n",
                   mode, dq_, Q, dd, E, den > 0 ? num / den : 0.0, mx);
        }
    }

    const int L = 16;
    const char *names[] = {"engine: norm tails + L2-prefetch blocks, own launches",
                           "both norms folded", "both folded, 1 trip prefetched",
                           "both folded, 2 trips prefetched",
                           "Q/K/V/gate norm folded (1 trip), gate/up's own",
                           "engine without prefetch blocks"};
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
    for (int round = 0; round < 3; round++)
        for (int m = 0; m < NM; m++) {
            for (int w = 0; w < 3; w++) CK(cudaGraphLaunch(ge[m], st));
            const double ms = median_ms(st, 10, [&](int) { CK(cudaGraphLaunch(ge[m], st)); });
            CK(cudaGetLastError());
            printf("round %d %-56s %8.2f us per layer\n", round, names[m], ms * 1000.0 / L);
        }
    return 0;
}
#endif
