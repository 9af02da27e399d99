// lmflat: the LM head (split-layout Q6_K, 202,048 x 6,656) with each warp's four 4-row units
// taken as one stream of super-block columns, as the flat FFN gate/up launch does for Q4_K: 13
// full loop trips per warp instead of 4 x 4 whose last has 2 of 8 slots loading. A lane sees
// the super-blocks of unit i shifted by i · 26 mod 8 slots (a multiple of 8 lanes), which the
// butterfly warp sum adds in the same pairs, so the same bits as the engine's segment launch
// (mvq_seg_44_lb4). Against that launch and a plain read of the same bytes.
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

// U units of 4 rows per warp, MINB blocks of 4 warps per SM.
template <int U, int MINB>
__global__ void __launch_bounds__(128, MINB)
    lm_flat(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
            const float *sa, int n_in, int post, float scale, float cap) {
    constexpr int RR = 4;
    const int rowb = (blockIdx.x * 4 + (threadIdx.x >> 5)) * 4 * U;
    if (rowb >= n_out) return;
    const int lane = threadIdx.x & 31;
    const int nb = n_in >> 8;
    const u16 *dv = (const u16 *)(w + (size_t)n_out * nb * 208);
    const int h = (lane >> 1) & 1, p = lane & 1, s = lane >> 2;
    float acc0[RR] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[RR] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int total = U * nb;
    int done = 0;
    for (int g0 = 0; g0 < total; g0 += 8) {
        const int g = min(g0 + s, total - 1);
        const int i = g / nb, b = g - i * nb;
        const int row0 = rowb + 4 * i;
        uint4 lo[RR], hi[RR], qh[RR];
        uint2 sc[RR];
        float d[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) Q6KS_LOAD(r, b);
        Q6KS_ACT(b)
        const bool valid = g0 + s < total, odd = i & 1;
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const float t = q6ks_term(lo[r], hi[r], qh[r], sc[r], d[r], a, dx, a32, p);
            if (valid && !odd) acc0[r] += t;
            if (valid && odd) acc1[r] += t;
        }
        while (done < U && (done + 1) * nb <= g0 + 8) {
#pragma unroll
            for (int r = 0; r < RR; r++) {
                const float v = warp_sum(done & 1 ? acc1[r] : acc0[r]);
                const int row = rowb + 4 * done + r;
                if (lane == 0 && row < n_out) y[row] = post_op(v, post, scale, cap);
                if (done & 1)
                    acc1[r] = 0.0f;
                else
                    acc0[r] = 0.0f;
            }
            done++;
        }
    }
}

#ifndef MVBW_DEVICE_ONLY
__global__ void rd_stream8(const uint4 *p, size_t n16, u32 *sink) {
    u32 x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n16; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = p[i + u * stride];
#pragma unroll
        for (int u = 0; u < 8; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) x ^= p[i].x;
    if (x == 0x12345678u) sink[0] = x;
}

int main() {
    const int n_v = 202048, n_in = 6656, nb = n_in / 256;
    const size_t nbl = (size_t)n_v * nb, lm = nbl * 210;
    u8 *w[2];
    float *y, *y2;
    signed char *qa;
    float *da, *sa;
    u32 *sink;
    for (int s = 0; s < 2; s++) {
        CK(cudaMalloc(&w[s], lm));
        fill_q4k<<<1024, 256>>>(w[s], lm / 144, 99 + s);
        fill_d16<<<1024, 256>>>((u16 *)(w[s] + nbl * 208), nbl);
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
    } vs[] = {{"flat, 4 units, 4 blocks/SM", lm_flat<4, 4>, 64},
              {"flat, 4 units, 3 blocks/SM", lm_flat<4, 3>, 64},
              {"flat, 2 units, 4 blocks/SM", lm_flat<2, 4>, 32}};
    for (auto &v : vs) {
        CK(cudaMemset(y2, 0, (size_t)n_v * 4));
        v.k<<<n_v / v.rows_per_block, 128>>>(w[0], n_v, y2, qa, da, sa, n_in, 1, scale, cap);
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
                v.k<<<n_v / v.rows_per_block, 128>>>(w[i % 2], n_v, y2, qa, da, sa, n_in, 1, scale, cap);
            }, 10);
            printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, v.name, t, lm / t * 1e-3);
        }
        const double t2 = time_us([&](int i) {
            rd_stream8<<<132 * 8, 256>>>((const uint4 *)w[i % 2], lm / 16, sink);
        }, 10);
        printf("round %d %-40s %8.2f us  %7.1f GB/s\n", round, "stream read of the same bytes", t2, lm / t2 * 1e-3);
    }
    return 0;
}
#endif
