// q6k: the split-Q6_K matvec's work split for the FFN down projection (6656 x 19968, 109 MB)
// and the LM head (202048 x 6656, 1.1 GB). The engine's mvq_one_q6ks_lb4 (4 rows per warp,
// 128 registers, 416 blocks: 12.6 warps per SM, one partial wave) reads the down projection at
// ~3.4 TB/s where the Q4_K gate/up launch reaches 3.8. Variants with 2 rows per warp and
// more blocks per SM (the same per-row arithmetic, so the same bits), interleaved with the
// engine's kernel on weights beyond L2.
//   bash tools/bench/mvbw/run.sh OUT q6k
// Measured (bench/runs/2026-11-30-h200-o o6): every variant slower than the engine's (down
// 31.8 µs against 32.8-48.2; LM head 269-274 against 275-501). Round w (w7): the engine's
// rows with L2 prefetches of a later trip (q6ks_pf).
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

template <int RR, int MINB>
__global__ void __launch_bounds__(128, MINB)
    q6ks_v(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
           const float *sa, int n_in) {
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * RR;
    if (row0 >= n_out) return;
    q6ks_rows<RR>(w, qa, da, sa, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);
}

// Round w: the engine's rows with each trip's loads followed by an L2 prefetch of the trip A
// ahead (lanes of h = p = 0: the lines of their super-block's ql, ql + 32 and qh pieces), so
// that a warp has more than one trip of bytes requested while it computes: the same
// arithmetic, the same bits. (Measured in round w on the split layout before round z; the
// addresses since follow the layout.)
#define Q6KS_PF_AHEAD(A)                                                                       \
    if ((lane & 3) == 0 && b + 8 * (A) < nb) {                                                 \
        _Pragma("unroll") for (int r = 0; r < RR; r++) {                                       \
            int m_;                                                                            \
            const u8 *pb = q6s_part(w, nb, row0 + r, b + 8 * (A), &m_) + 64 * (lane >> 2);     \
            asm volatile("prefetch.global.L2 [%0];" ::"l"(pb));                                \
            asm volatile("prefetch.global.L2 [%0];" ::"l"(pb + 64 * m_));                      \
            asm volatile("prefetch.global.L2 [%0];" ::"l"(pb + 128 * m_));                     \
        }                                                                                      \
    }

template <int RR, int A>
__device__ __forceinline__ void q6ks_rows_pf(const u8 *w, const signed char *qa, const float *da,
                                             const float *sa, float *y, int n_in, int n_out,
                                             int row0, int post, float scale, float cap) {
    Q6KS_ROWS_BODY_PF(lane >> 2, nb, Q6KS_PF_AHEAD(A))
}

template <int A>
__global__ void __launch_bounds__(128, 4)
    q6ks_pf(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
            const float *sa, int n_in) {
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * 4;
    if (row0 >= n_out) return;
    q6ks_rows_pf<4, A>(w, qa, da, sa, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);
}

#ifndef MVBW_DEVICE_ONLY
int main() {
    signed char *qa;
    float *da, *sa, *ref, *y;
    act_i8(&qa, &da, &sa, 19968);
    CK(cudaMalloc(&ref, 202048 * 4));
    CK(cudaMalloc(&y, 202048 * 4));
    struct Shape { const char *name; int n_out, n_in, sets, reps; };
    for (Shape sh : {Shape{"down 6656x19968", 6656, 19968, 3, 50},
                     Shape{"LM head 202048x6656", 202048, 6656, 1, 10}}) {
        const size_t m = q6s_bytes(sh.n_out, sh.n_in / 256);
        std::vector<u8 *> ws(sh.sets);
        for (size_t i = 0; i < ws.size(); i++) ws[i] = q6s_random(sh.n_out, sh.n_in / 256, 99 + (u32)i);
        auto eng = [&](int i, float *out) {
            mvq_one_q6ks_lb4<<<sh.n_out / 16, 128>>>(ws[i % sh.sets], sh.n_out, out, qa, da, sa, sh.n_in);
        };
        eng(0, ref);
        CK(cudaDeviceSynchronize());
        std::vector<float> a(sh.n_out), b(sh.n_out);
        CK(cudaMemcpy(a.data(), ref, sh.n_out * 4, cudaMemcpyDeviceToHost));
        auto variant = [&](const char *name, auto kern, int rr) {
            const int grid = sh.n_out / (4 * rr);
            kern<<<grid, 128>>>(ws[0], sh.n_out, y, qa, da, sa, sh.n_in);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(b.data(), y, sh.n_out * 4, cudaMemcpyDeviceToHost));
            int diff = 0;
            for (int i = 0; i < sh.n_out; i++) diff += memcmp(&a[i], &b[i], 4) != 0;
            for (int round = 0; round < 2; round++) {
                const double te = time_us([&](int i) { eng(i, ref); }, sh.reps);
                const double tv = time_us([&](int i) {
                    kern<<<grid, 128>>>(ws[i % sh.sets], sh.n_out, y, qa, da, sa, sh.n_in);
                }, sh.reps);
                printf("%-20s %-14s engine %8.2f us, variant %8.2f us (%5.0f / %5.0f GB/s), %d of %d differ\n",
                       sh.name, name, te, tv, m / te * 1e-3, m / tv * 1e-3, diff, sh.n_out);
            }
        };
        variant("RR4 lb4", q6ks_v<4, 4>, 4);
        variant("L2 prefetch 1 ahead", q6ks_pf<1>, 4);
        variant("L2 prefetch 2 ahead", q6ks_pf<2>, 4);
        variant("L2 prefetch 3 ahead", q6ks_pf<3>, 4);
        variant("L2 prefetch 5 ahead", q6ks_pf<5>, 4);
        for (auto p : ws) CK(cudaFree(p));
    }
    return 0;
}
#endif
