// splitk: the one-token matvecs with their K range (super-block columns) split over blocks,
// each block writing a partial row that the consumer (the next norm tail) would add in a
// fixed order. The FFN down projection (6656 x 19968: 416 blocks of 16 rows, 12.6 warps per
// SM, ~3.4 TB/s where the gate/up launch reaches 3.8), the output projection (6656 x 4096)
// and the Q/K/V/gate shape (8704 x 6656) as the engine runs them against S slices of the
// columns (S x as many blocks, each row's slices summed on the host for the check), on
// weights beyond L2, interleaved with the engine's kernel.
//   bash tools/bench/mvbw/run.sh OUT splitk
// Measured (bench/runs/2026-11-30-h200-p p2): down Q4_K 22.1 → 21.1 µs at 8 super-blocks per
// slice, Q6_K 32.1 → 31.4 at 16, Q/K/V/gate 12.6 → 11.3 at 8, the output projection
// unchanged. In the step (branch cuda-down-split, p3) the down split lost: 193.3 → 191.8
// tok/s (8/16), 193.0 (16/16): the norm tail's extra partial-row loads cost what the matvec
// gained; with the weights evict-first in L2 (p6) it is neutral (199.3 → 198.9 / 199.1).
#ifndef MVBW_DEVICE_ONLY
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#endif

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "../../../crates/muser-engine/src/cuda/kernels/mvq1.cu"
#include "bench.cuh"

// The K slices: slice s of S covers super-blocks [s * per, min((s + 1) * per, nb)).
struct Slices { int S, per; };

// Block b: slice b / groups (slice-major, SM = 1) or b % S (group-major, SM = 0); its group
// of 4 warps x RR rows over the slice, through the engine's q4k_rows_k (Q6 = 0) or
// q6ks_rows_k (split-layout Q6_K). Output y[slice * n_out + row].
template <int RR, int MINB, int SM, int Q6>
__global__ void __launch_bounds__(128, MINB)
    mv_sk(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
          const float *sa, int n_in, Slices sl) {
    const int groups = (n_out + 4 * RR - 1) / (4 * RR);
    const int s = SM ? blockIdx.x / groups : blockIdx.x % sl.S;
    const int g = SM ? blockIdx.x % groups : blockIdx.x / sl.S;
    const int row0 = (g * 4 + (threadIdx.x >> 5)) * RR;
    if (row0 >= n_out) return;
    const int nb = n_in >> 8, sb0 = s * sl.per, sb1 = min(nb, sb0 + sl.per);
    float *out = y + (size_t)s * n_out + row0;
    if (Q6)
        q6ks_rows_k<RR>(w, qa, da, sa, out, n_in, n_out, row0, sb0, sb1, 0, 1.0f, 0.0f);
    else
        q4k_rows_k<RR>(w, qa, da, sa, out, n_in, n_out, row0, sb0, sb1, 0, 1.0f, 0.0f);
}

#ifndef MVBW_DEVICE_ONLY
typedef void (*Kern)(const u8 *, int, float *, const signed char *, const float *,
                     const float *, int, Slices);

int main() {
    signed char *qa;
    float *da, *sa, *ref, *y;
    act_i8(&qa, &da, &sa, 19968);
    CK(cudaMalloc(&ref, 8704 * 4));
    CK(cudaMalloc(&y, 16 * 8704 * 4));
    struct Shape { const char *name; int n_out, n_in, q6; int sets; };
    for (Shape sh : {Shape{"down Q4_K 6656x19968", 6656, 19968, 0, 4},
                     Shape{"down Q6_K 6656x19968", 6656, 19968, 1, 3},
                     Shape{"O 6656x4096", 6656, 4096, 0, 16},
                     Shape{"QKVG 8704x6656", 8704, 6656, 0, 8}}) {
        const int nb = sh.n_in / 256;
        const size_t nbl = (size_t)sh.n_out * nb;
        const size_t m = sh.q6 ? q6s_bytes(sh.n_out, nb) : nbl * 144;
        std::vector<u8 *> ws(sh.sets);
        for (size_t i = 0; i < ws.size(); i++) {
            if (sh.q6) {
                ws[i] = q6s_random(sh.n_out, nb, 99 + (u32)i);
                continue;
            }
            CK(cudaMalloc(&ws[i], m));
            fill_q4k<<<1024, 256>>>(ws[i], m / 144, 99 + (u32)i);
        }
        auto eng = [&](int i, float *out) {
            if (sh.q6)
                mvq_one_q6ks_lb4<<<sh.n_out / 16, 128>>>(ws[i % sh.sets], sh.n_out, out, qa, da,
                                                         sa, sh.n_in);
            else
                mvq_one_q4k_lb5<<<sh.n_out / 16, 128>>>(ws[i % sh.sets], sh.n_out, out, qa, da,
                                                        sa, sh.n_in);
        };
        eng(0, ref);
        CK(cudaDeviceSynchronize());
        std::vector<float> a(sh.n_out), b(16 * sh.n_out);
        CK(cudaMemcpy(a.data(), ref, sh.n_out * 4, cudaMemcpyDeviceToHost));
        double amax = 0;
        for (float v : a) amax = std::max(amax, (double)fabsf(v));
        auto variant = [&](const char *name, Kern kern, int rr, int per) {
            const Slices sl{(nb + per - 1) / per, per};
            const int grid = (sh.n_out + 4 * rr - 1) / (4 * rr) * sl.S;
            kern<<<grid, 128>>>(ws[0], sh.n_out, y, qa, da, sa, sh.n_in, sl);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(b.data(), y, (size_t)sl.S * sh.n_out * 4, cudaMemcpyDeviceToHost));
            double md = 0;
            for (int i = 0; i < sh.n_out; i++) {
                float s = 0.f;
                for (int j = 0; j < sl.S; j++) s += b[(size_t)j * sh.n_out + i];
                md = std::max(md, (double)fabsf(s - a[i]));
            }
            for (int round = 0; round < 2; round++) {
                const double te = time_us([&](int i) { eng(i, ref); }, 50);
                const double tv = time_us([&](int i) {
                    kern<<<grid, 128>>>(ws[i % sh.sets], sh.n_out, y, qa, da, sa, sh.n_in, sl);
                }, 50);
                printf("%-22s %-24s S=%d grid %5d  engine %7.2f us, variant %7.2f us (%5.0f / %5.0f GB/s), max|diff| %.2e of %.2e\n",
                       sh.name, name, sl.S, grid, te, tv, m / te * 1e-3, m / tv * 1e-3, md, amax);
            }
        };
        if (sh.q6) {
            variant("RR4 lb4 group-major", mv_sk<4, 4, 0, 1>, 4, nb);
            variant("RR4 lb4 group-major", mv_sk<4, 4, 0, 1>, 4, 40);
            variant("RR4 lb4 slice-major", mv_sk<4, 4, 1, 1>, 4, 40);
            variant("RR4 lb4 group-major", mv_sk<4, 4, 0, 1>, 4, 26);
            variant("RR4 lb4 slice-major", mv_sk<4, 4, 1, 1>, 4, 26);
            variant("RR4 lb4 group-major", mv_sk<4, 4, 0, 1>, 4, 16);
            variant("RR4 lb4 slice-major", mv_sk<4, 4, 1, 1>, 4, 16);
            variant("RR2 lb6 group-major", mv_sk<2, 6, 0, 1>, 2, 40);
            variant("RR2 lb6 group-major", mv_sk<2, 6, 0, 1>, 2, 16);
        } else {
            variant("RR4 lb5 group-major", mv_sk<4, 5, 0, 0>, 4, nb);
            variant("RR4 lb5 group-major", mv_sk<4, 5, 0, 0>, 4, (nb + 1) / 2);
            variant("RR4 lb5 slice-major", mv_sk<4, 5, 1, 0>, 4, (nb + 1) / 2);
            variant("RR4 lb5 group-major", mv_sk<4, 5, 0, 0>, 4, 16);
            variant("RR4 lb5 slice-major", mv_sk<4, 5, 1, 0>, 4, 16);
            variant("RR4 lb5 group-major", mv_sk<4, 5, 0, 0>, 4, 8);
            variant("RR4 lb5 slice-major", mv_sk<4, 5, 1, 0>, 4, 8);
            variant("RR4 lb5 group-major", mv_sk<4, 5, 0, 0>, 4, (nb + 2) / 3);
            variant("RR2 lb8 group-major", mv_sk<2, 8, 0, 0>, 2, (nb + 1) / 2);
            variant("RR2 lb8 group-major", mv_sk<2, 8, 0, 0>, 2, 16);
        }
        for (auto p : ws) CK(cudaFree(p));
    }
    return 0;
}
#endif
