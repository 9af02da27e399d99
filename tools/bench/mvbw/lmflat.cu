// lmflat: the LM head (split-layout Q6_K, 202,048 x 6,656) through the engine's flat kernel
// (mvq_flat_q6ks_lb4: each warp's four 4-row units as one stream of super-block columns, 13
// full loop trips per warp instead of 4 x 4 whose last has 2 of 8 slots loading), checked bit
// for bit against the segment launch (mvq_seg_44_lb4) and timed against it and a plain read of
// the same bytes. y7's log (bench/runs/2026-12-01-h200-y) came from this file's first version,
// with the kernel here as a template over units per warp (2, 4) and blocks per SM (3, 4).
// Since round z the segment launch reads the split layout in 1 unit and the flat kernel the
// one in FLAT_UNITS units (common.cuh), both rewritten by the engine's q6k_split from the same
// file-layout blocks; the flat kernel is also timed on the 1-unit copy (wrong values there).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT lmflat
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

#ifndef MVBW_DEVICE_ONLY
int main() {
    const int n_v = 202048, n_in = 6656, nb = n_in / 256;
    const size_t lm = q6s_bytes(n_v, nb);
    u8 *w[2], *w4[2];
    float *y, *y2;
    signed char *qa;
    float *da, *sa;
    u32 *sink;
    for (int s = 0; s < 2; s++) {
        const int units[2] = {1, FLAT_UNITS};
        u8 *out[2];
        q6s_random_units(n_v, nb, 99 + s, units, out, 2);
        w[s] = out[0];
        w4[s] = out[1];
    }
    CK(cudaMalloc(&y, (size_t)n_v * 4));
    CK(cudaMalloc(&y2, (size_t)n_v * 4));
    CK(cudaMalloc(&sink, 4));
    act_i8(&qa, &da, &sa, n_in);
    CK(cudaDeviceSynchronize());
    const float scale = 0.5f, cap = 30.0f;
    auto seg = [&](int s, float *out) {
        mvq_seg_44_lb4<<<n_v / 16, 128>>>(w[s], SEG_Q6_K_SPLIT, n_v, out, nullptr, 0, 0, nullptr,
                                          1 << 30, nullptr, 0, 0, nullptr, 1 << 30, nullptr, 0, 0,
                                          nullptr, 1 << 30, qa, da, sa, n_in, 1, scale, cap);
    };
    std::vector<float> a(n_v), b(n_v);
    seg(0, y);
    CK(cudaMemcpy(a.data(), y, (size_t)n_v * 4, cudaMemcpyDeviceToHost));
    struct V {
        const char *name;
        void (*k)(const u8 *, int, float *, const signed char *, const float *, const float *, int,
                  int, float, float);
        int rows_per_block;
    } vs[] = {{"mvq_flat_q6ks_lb4 (engine, flat)", mvq_flat_q6ks_lb4, 16 * FLAT_UNITS}};
    for (auto &v : vs) {
        CK(cudaMemset(y2, 0, (size_t)n_v * 4));
        v.k<<<n_v / v.rows_per_block, 128>>>(w4[0], n_v, y2, qa, da, sa, n_in, 1, scale, cap);
        CK(cudaGetLastError());
        CK(cudaMemcpy(b.data(), y2, (size_t)n_v * 4, cudaMemcpyDeviceToHost));
        int diff = 0, nan = 0;
        for (int i = 0; i < n_v; i++) {
            diff += memcmp(&a[i], &b[i], 4) != 0;
            nan += b[i] != b[i];
        }
        printf("%-32s vs mvq_seg_44_lb4: %d of %d logits differ in bits, %d NaN\n", v.name, diff, n_v,
               nan);
    }
    for (int round = 0; round < 3; round++) {
        const double t0 = time_us([&](int i) { seg(i % 2, y); }, 10);
        printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, "mvq_seg_44_lb4 (engine)", t0, lm / t0 * 1e-3);
        for (auto &v : vs) {
            const double t = time_us([&](int i) {
                v.k<<<n_v / v.rows_per_block, 128>>>(w4[i % 2], n_v, y2, qa, da, sa, n_in, 1, scale, cap);
            }, 10);
            printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, v.name, t, lm / t * 1e-3);
            const double t1 = time_us([&](int i) {
                v.k<<<n_v / v.rows_per_block, 128>>>(w[i % 2], n_v, y2, qa, da, sa, n_in, 1, scale, cap);
            }, 10);
            printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, "  the same on the 1-unit layout", t1, lm / t1 * 1e-3);
        }
        const double t2 = time_us([&](int i) {
            rd_stream<8><<<132 * 8, 256>>>((const uint4 *)w[i % 2], lm / 16, sink);
        }, 10);
        printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, "stream read of the same bytes", t2, lm / t2 * 1e-3);
    }
    return 0;
}
#endif
