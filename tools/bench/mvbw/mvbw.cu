// mvbw: DRAM bandwidth of the decode matvec's load patterns on the device, built there with
// nvcc (`bash tools/bench/mvbw/run.sh OUT`). It includes the engine's own kernels
// (common.cuh, mvq1.cu) and measures, on buffers far larger than L2 (two weight sets used in
// turn), the FFN gate/up launch (`mvq_gu_swiglu`) against: a plain streaming read (the
// ceiling), its load pattern without the arithmetic, and the same launch over a "tiled" Q4_K
// layout where each warp's loop trip is one contiguous run of bytes and every load
// instruction of the warp covers 512 contiguous bytes. It also checks that the tiled kernel
// gives the same bits as the file-layout one.
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




// mvq_gu_swiglu over the tiled layout.
extern "C" __global__ void __launch_bounds__(128, 5)
    mvq_gu_swiglu_tiled(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
                        const float *da, const float *sa, int n_in, signed char *qo,
                        float *dout, float *so) {
    __shared__ float gu[64];
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32;
#pragma unroll 1
    for (int p = 0; p < GU_PASSES; p++) {
        const int u = p * 4 + warp;
        q4k_rows_tiled(u < 8 ? wg : wu, qa, da, sa, gu + 4 * u, n_in, n_ff, r0 + 4 * (u & 7));
    }
    __syncthreads();
    if (warp == 0) {
        const int lane = threadIdx.x & 31;
        const float r = silu_mul(gu[lane], gu[32 + lane]);
        h[r0 + lane] = r;
        quant_block32(r, blockIdx.x, qo, dout, so);
    }
}


// q4k_rows<RR> with TB loop trips' weights loaded at once (TB memory round trips fewer per
// warp, TB times the registers); the same arithmetic in the same order, so the same bits.
template <int RR, int TB>
__device__ __forceinline__ void q4k_rows_b(const u8 *w, const signed char *qa, const float *da,
                                           const float *sa, float *y, int n_in, int n_out,
                                           int row0) {
    Q4K_LANE(RR);
    for (int b0 = lane >> 2; b0 < nb; b0 += 8 * TB) {
        uint4 hd[TB][RR], q0[TB][RR], q1[TB][RR];
#pragma unroll
        for (int t = 0; t < TB; t++) {
            const int b = min(b0 + 8 * t, nb - 1);
#pragma unroll
            for (int r = 0; r < RR; r++) {
                const u8 *blk = w + (size_t)min(row0 + r, n_out - 1) * row_bytes + (size_t)b * 144;
                Q4K_LOAD(blk, k, hd[t][r], q0[t][r], q1[t][r]);
            }
        }
#pragma unroll
        for (int t = 0; t < TB; t++) {
            const int b = b0 + 8 * t;
            if (b >= nb) break;
            Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
            for (int r = 0; r < RR; r++) {
                acc[r] += q4k_term(hd[t][r], q0[t][r], q1[t][r], x, sh, upper);
            }
        }
    }
    Q4K_STORE(RR, acc, y, row0, n_out);
}

template <int RR, int TB, int MINB>
__global__ void __launch_bounds__(128, MINB)
    mvb(const u8 *w, int n_out, int n_in, const signed char *qa, const float *da, const float *sa,
        float *y) {
    const int row0 = (blockIdx.x * 4 + (threadIdx.x >> 5)) * RR;
    if (row0 >= n_out) return;
    q4k_rows_b<RR, TB>(w, qa, da, sa, y + row0, n_in, n_out, row0);
}


// Loads only: q4k_rows's addresses (tiled = 0) or q4k_rows_tiled's (1), in the gate/up
// launch's shape, XOR-folded into one word per warp.
__global__ void __launch_bounds__(128, 5)
    rd_gu_pattern(const u8 *wg, const u8 *wu, int n_ff, int n_in, int tiled, u32 *sink) {
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32, lane = threadIdx.x & 31;
    const int nb = n_in >> 8, k = lane & 3, s = lane >> 2;
    u32 x = 0;
#pragma unroll 1
    for (int p = 0; p < GU_PASSES; p++) {
        const int u = p * 4 + warp;
        const u8 *w = u < 8 ? wg : wu;
        const int row0 = r0 + 4 * (u & 7);
        for (int b = s; b < nb; b += 8) {
            uint4 v[12];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                if (tiled) {
                    const int t = b >> 3, m = min(8, nb - 8 * t);
                    const u8 *part = w + (size_t)(row0 >> 2) * 4 * nb * 144 + (size_t)t * 4608 + r * m * 144;
                    v[3 * r] = *(const uint4 *)(part + 16 * s);
                    v[3 * r + 1] = *(const uint4 *)(part + 16 * m + 16 * lane);
                    v[3 * r + 2] = *(const uint4 *)(part + 80 * m + 16 * lane);
                } else {
                    const u8 *blk = w + (size_t)(row0 + r) * nb * 144 + (size_t)b * 144;
                    v[3 * r] = *(const uint4 *)blk;
                    v[3 * r + 1] = *(const uint4 *)(blk + 16 + 32 * k);
                    v[3 * r + 2] = *(const uint4 *)(blk + 32 + 32 * k);
                }
            }
#pragma unroll
            for (int i = 0; i < 12; i++) x ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
        }
    }
    if (x == 0x12345678u) sink[0] = x;
}

#ifndef MVBW_DEVICE_ONLY
int main() {
    const int n_ff = 19968, n_in = 6656, nb = n_in / 256;
    const size_t mat = (size_t)n_ff * nb * 144;  // one matrix
    const int sets = 2;                          // weight sets used in turn (2 x 150 MB)
    u8 *file[sets][2], *tile[sets][2];
    for (int s = 0; s < sets; s++)
        for (int j = 0; j < 2; j++) {
            CK(cudaMalloc(&file[s][j], mat));
            CK(cudaMalloc(&tile[s][j], mat));
            fill_q4k<<<1024, 256>>>(file[s][j], mat / 144, 17 + 2 * s + j);
            q4k_tile<<<1024, 256>>>(file[s][j], tile[s][j], n_ff, nb);
        }
    signed char *qa, *qo;
    float *da, *sa, *h, *dout, *so;
    u32 *sink;
    CK(cudaMalloc(&qa, n_in));
    CK(cudaMalloc(&da, n_in / 32 * 4));
    CK(cudaMalloc(&sa, n_in / 32 * 4));
    CK(cudaMalloc(&qo, n_ff));
    CK(cudaMalloc(&h, n_ff * 4));
    CK(cudaMalloc(&dout, n_ff / 32 * 4));
    CK(cudaMalloc(&so, n_ff / 32 * 4));
    CK(cudaMalloc(&sink, 4));
    fill_i8<<<64, 256>>>(qa, da, sa, n_in, 5);
    CK(cudaDeviceSynchronize());

    // Same bits: file layout vs tiled.
    std::vector<float> h1(n_ff), h2(n_ff);
    const int grid = n_ff / 32;
    mvq_gu_swiglu<<<grid, 128>>>(file[0][0], file[0][1], n_ff, h, qa, da, sa, n_in, qo, dout, so);
    CK(cudaMemcpy(h1.data(), h, n_ff * 4, cudaMemcpyDeviceToHost));
    mvq_gu_swiglu_tiled<<<grid, 128>>>(tile[0][0], tile[0][1], n_ff, h, qa, da, sa, n_in, qo, dout, so);
    CK(cudaMemcpy(h2.data(), h, n_ff * 4, cudaMemcpyDeviceToHost));
    int diff = 0, nan = 0;
    for (int i = 0; i < n_ff; i++) {
        if (memcmp(&h1[i], &h2[i], 4) != 0) diff++;
        if (h1[i] != h1[i]) nan++;
    }
    printf("tiled vs file: %d of %d outputs differ in bits, %d NaN; h[0..3] = %g %g %g\n", diff,
           n_ff, nan, h1[0], h1[1], h1[2]);

    {
        std::vector<float> h3(n_ff);
        mvq_gu_swiglu_flat<<<grid, 128>>>(file[0][0], file[0][1], n_ff, h, qa, da, sa, n_in, qo, dout, so);
        CK(cudaMemcpy(h3.data(), h, n_ff * 4, cudaMemcpyDeviceToHost));
        double md = 0, mx = 0;
        int nd = 0;
        for (int i = 0; i < n_ff; i++) {
            md = std::max(md, (double)fabsf(h3[i] - h1[i]));
            mx = std::max(mx, (double)fabsf(h1[i]));
            nd += memcmp(&h3[i], &h1[i], 4) != 0;
        }
        printf("flat vs engine: %d of %d outputs differ in bits, max |diff| %.3g of max |h| %.3g\n", nd,
               n_ff, md, mx);
    }
    const double bytes = 2.0 * mat;
    auto report = [&](const char *name, double us) {
        printf("%-44s %8.2f us  %7.1f GB/s\n", name, us, bytes / us * 1e-3);
    };
    const int reps = 50;
    // The gate/up launches (one signature) on the file or the tiled layout, then the loads alone.
    typedef void (*GuKernel)(const u8 *, const u8 *, int, float *, const signed char *,
                             const float *, const float *, int, signed char *, float *, float *);
    const struct {
        const char *name;
        GuKernel k;
        bool tiled;
    } gu_runs[] = {
        {"mvq_gu_swiglu (file layout, engine)", mvq_gu_swiglu, false},
        {"mvq_gu_swiglu_tiled", mvq_gu_swiglu_tiled, true},
        {"mvq_gu_swiglu_flat (engine, 13 trips)", mvq_gu_swiglu_flat, false},
        {"mvq_gu_swiglu (file layout, engine) again", mvq_gu_swiglu, false},
    };
    for (const auto &r : gu_runs)
        report(r.name, time_us([&](int i) {
                   u8 *const *w = r.tiled ? tile[i % sets] : file[i % sets];
                   r.k<<<grid, 128>>>(w[0], w[1], n_ff, h, qa, da, sa, n_in, qo, dout, so);
               }, reps));
    for (int tiled : {0, 1})
        report(tiled ? "loads only, tiled pattern" : "loads only, file pattern", time_us([&](int i) {
                   u8 *const *w = tiled ? tile[i % sets] : file[i % sets];
                   rd_gu_pattern<<<grid, 128>>>(w[0], w[1], n_ff, n_in, tiled, sink);
               }, reps));
    // The streaming read covers one matrix pair as one buffer: file[s][0] and [s][1] are
    // separate allocations, so read each (half the bytes each launch, two launches).
    for (int blocks : {132 * 4, 132 * 8, 132 * 16}) {
        char name[64];
        snprintf(name, sizeof name, "stream read x4, %d blocks x 256", blocks);
        report(name, time_us([&](int i) {
                   const int s = i % sets;
                   rd_stream<4><<<blocks, 256>>>((const uint4 *)file[s][0], mat / 16, sink);
                   rd_stream<4><<<blocks, 256>>>((const uint4 *)file[s][1], mat / 16, sink);
               }, reps));
        snprintf(name, sizeof name, "stream read x8, %d blocks x 256", blocks);
        report(name, time_us([&](int i) {
                   const int s = i % sets;
                   rd_stream<8><<<blocks, 256>>>((const uint4 *)file[s][0], mat / 16, sink);
                   rd_stream<8><<<blocks, 256>>>((const uint4 *)file[s][1], mat / 16, sink);
               }, reps));
    }

    // Sub-wave shapes, weights rotated over enough sets to exceed L2: the output projection
    // (6656 x 4096) and the Q/K/V/gate launch (8704 x 6656, all Q4_K here).
    {
        struct Shape { const char *name; int n_out, n_in, sets; };
        for (Shape sh : {Shape{"O 6656x4096", 6656, 4096, 10}, Shape{"QKVG 8704x6656", 8704, 6656, 5}, Shape{"down 6656x19968", 6656, 19968, 2}}) {
            const int nbs = sh.n_in / 256;
            const size_t m = (size_t)sh.n_out * nbs * 144;
            std::vector<u8 *> ws(sh.sets);
            for (auto &p : ws) {
                CK(cudaMalloc(&p, m));
                fill_q4k<<<1024, 256>>>(p, m / 144, 1234 + (u32)(&p - ws.data()));
            }
            signed char *qx;
            float *dx, *sx, *yy;
            CK(cudaMalloc(&qx, sh.n_in));
            CK(cudaMalloc(&dx, sh.n_in / 32 * 4));
            CK(cudaMalloc(&sx, sh.n_in / 32 * 4));
            CK(cudaMalloc(&yy, sh.n_out * 4));
            fill_i8<<<64, 256>>>(qx, dx, sx, sh.n_in, 9);
            std::vector<float> ref(sh.n_out), got(sh.n_out);
            auto check = [&](const char *name, auto kern, int rr) {
                const int grid = (sh.n_out + 4 * rr - 1) / (4 * rr);
                CK(cudaMemset(yy, 0, sh.n_out * 4));
                kern<<<grid, 128>>>(ws[0], sh.n_out, sh.n_in, qx, dx, sx, yy);
                CK(cudaMemcpy(got.data(), yy, sh.n_out * 4, cudaMemcpyDeviceToHost));
                int diff = 0;
                for (int i = 0; i < sh.n_out; i++) diff += memcmp(&got[i], &ref[i], 4) != 0;
                const double t = time_us([&](int i) {
                    kern<<<grid, 128>>>(ws[i % sh.sets], sh.n_out, sh.n_in, qx, dx, sx, yy);
                }, 100);
                printf("%-16s %-34s %7.2f us  %7.1f GB/s  %d of %d differ\n", sh.name, name, t,
                       m / t * 1e-3, diff, sh.n_out);
            };
            {
                const int grid = sh.n_out / 16;
                mvq_seg_42_lb5<<<grid, 128>>>(ws[0], SEG_Q4_K, sh.n_out, yy, nullptr, 0, 0, nullptr,
                                              1 << 30, nullptr, 0, 0, nullptr, 1 << 30, nullptr, 0,
                                              0, nullptr, 1 << 30, qx, dx, sx, sh.n_in, 0, 1.0f, 0.0f);
                CK(cudaMemcpy(ref.data(), yy, sh.n_out * 4, cudaMemcpyDeviceToHost));
                const double t = time_us([&](int i) {
                    mvq_seg_42_lb5<<<grid, 128>>>(ws[i % sh.sets], SEG_Q4_K, sh.n_out, yy, nullptr, 0,
                                                  0, nullptr, 1 << 30, nullptr, 0, 0, nullptr,
                                                  1 << 30, nullptr, 0, 0, nullptr, 1 << 30, qx, dx,
                                                  sx, sh.n_in, 0, 1.0f, 0.0f);
                }, 100);
                printf("%-16s %-34s %7.2f us  %7.1f GB/s\n", sh.name, "mvq_seg_42_lb5 (engine)", t, m / t * 1e-3);
            }

            check("RR4 TB1 lb5 (= engine loop)", mvb<4, 1, 5>, 4);
            check("RR4 TB2 lb3", mvb<4, 2, 3>, 4);
            check("RR4 TB2 lb4", mvb<4, 2, 4>, 4);
            check("RR2 TB2 lb6", mvb<2, 2, 6>, 2);
            check("RR2 TB2 lb8", mvb<2, 2, 8>, 2);
            check("RR2 TB1 lb8", mvb<2, 1, 8>, 2);
            check("RR1 TB4 lb8", mvb<1, 4, 8>, 1);
            check("RR1 TB2 lb12", mvb<1, 2, 12>, 1);
            check("RR2 TB4 lb4", mvb<2, 4, 4>, 2);
            check("RR2 TB1 lb10", mvb<2, 1, 10>, 2);
            check("RR4 TB1 lb8", mvb<4, 1, 8>, 4);
            for (auto p : ws) CK(cudaFree(p));
        }
    }
    // The LM head's shape: Q6_K (split layout) 202048 x 6656 through mvq_seg_44_lb4, 1.1 GB.
    {
        const int n_v = 202048;
        const size_t lm = q6s_bytes(n_v, nb);
        float *y;
        u8 *w = q6s_random(n_v, nb, 99);
        CK(cudaMalloc(&y, (size_t)n_v * 4));
        const int blocks = n_v / 16;
        const double t = time_us([&](int) {
            mvq_seg_44_lb4<<<blocks, 128>>>(w, SEG_Q6_K_SPLIT, n_v, y, nullptr, 0, 0, nullptr,
                                             1 << 30, nullptr, 0, 0, nullptr, 1 << 30, nullptr, 0,
                                             0, nullptr, 1 << 30, qa, da, sa, n_in, 0, 1.0f, 0.0f);
        }, 10);
        printf("%-44s %8.2f us  %7.1f GB/s\n", "LM head Q6_K split, mvq_seg_44_lb4", t, lm / t * 1e-3);
        const double t2 = time_us([&](int) {
            rd_stream<8><<<132 * 8, 256>>>((const uint4 *)w, lm / 16, sink);
        }, 10);
        printf("%-44s %8.2f us  %7.1f GB/s\n", "LM head bytes, stream read x8", t2, lm / t2 * 1e-3);
        CK(cudaFree(w));
    }
    // Device-to-device copy (bytes read + written), the issue's reference figure.
    report("cudaMemcpy D2D (read+write bytes)", time_us([&](int i) {
               const int s = i % sets;
               CK(cudaMemcpyAsync(tile[s][0], file[s][0], mat, cudaMemcpyDeviceToDevice));
           }, reps));
    return 0;
}
#endif
