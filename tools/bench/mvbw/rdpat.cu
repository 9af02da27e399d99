// rdpat: read ceilings of the decode matvecs' access patterns, loads only (no arithmetic), on
// weights beyond L2 (a ring of buffers used in turn). Each warp reads "trips" of one 4,608-byte
// tile (4 rows x 8 Q4_K super-blocks, the engine's tiled layouts: 9 load instructions of 512
// contiguous bytes), at the engine's occupancy (blocks of 4 warps, 5 per SM). The question: does
// the order of the tiles in memory matter, i.e. is a warp streaming its own contiguous run
// (warp-major, as the engine's layouts are) slower than all warps reading one sliding window
// (trip-major: tile t·W + w), which is what a plain grid-stride read does? Shapes: the FFN
// gate/up launch (2,496 warps x 13 trips, 149.5 MB), the Q4_K down projection (1,664 x 10,
// 76.7 MB) and the Q/K/V/gate rows (2,176 x 4 trips, 40 MB with the last trip whole). Also:
// two trips in flight per warp, and the plain grid-stride read of the same bytes.
// b2's log (bench/runs/2026-12-02-h200-b) came from this file's first, standalone version
// (commit 4068293); it now takes the engine's ld_w16 and bench.cuh's plain read (rd_stream).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT rdpat
#ifndef MVBW_DEVICE_ONLY
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#endif

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "../../../crates/muser-engine/src/cuda/kernels/mvq1.cu"
#include "bench.cuh"

#define TILE 4608

// ORDER 0: warp-major (warp w's trips at tiles w·T .. w·T + T - 1); 1: trip-major (tile
// t·W + w); 2: block-major (the block's 4 warps' trip t adjacent, blocks' runs contiguous:
// tile (blk·T + t)·4 + warp). INF: trips in flight per warp (1 or 2).
template <int ORDER, int INF>
__global__ void __launch_bounds__(128, 5) rd_tiles(const u8 *base, int W, int T, u32 *sink) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int gw = blockIdx.x * 4 + warp;
    if (gw >= W) return;
    u32 x = 0;
    for (int t = 0; t < T; t += INF) {
        uint4 v[INF][9];
#pragma unroll
        for (int i = 0; i < INF; i++) {
            const int tt = min(t + i, T - 1);
            const size_t tile = ORDER == 0   ? (size_t)gw * T + tt
                                : ORDER == 1 ? (size_t)tt * W + gw
                                             : ((size_t)blockIdx.x * T + tt) * 4 + warp;
            const u8 *p = base + tile * TILE + 16 * lane;
#pragma unroll
            for (int j = 0; j < 9; j++) v[i][j] = ld_w16(p + 512 * j);
        }
#pragma unroll
        for (int i = 0; i < INF; i++)
#pragma unroll
            for (int j = 0; j < 9; j++) x ^= v[i][j].x ^ v[i][j].y ^ v[i][j].z ^ v[i][j].w;
    }
    if (x == 0x12345678u) sink[0] = x;
}

#ifndef MVBW_DEVICE_ONLY
int main() {
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    struct Shape {
        const char *name;
        int W, T;
    } shapes[] = {{"gate/up 2496 x 13", 2496, 13}, {"down Q4_K 1664 x 10", 1664, 10},
                  {"qkvg 2176 x 4", 2176, 4}};
    const size_t max_bytes = (size_t)2496 * 13 * TILE;
    const int ring = 12;  // 12 x 149.5 MB: every launch reads DRAM
    std::vector<u8 *> buf(ring);
    for (auto &b : buf) {
        CK(cudaMalloc(&b, max_bytes));
        CK(cudaMemset(b, 1, max_bytes));
    }
    u32 *sink;
    CK(cudaMalloc(&sink, 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int reps = 48;
    for (auto &s : shapes) {
        const double bytes = (double)s.W * s.T * TILE;
        const int blocks = (s.W + 3) / 4;
        auto run_one = [&](const char *what, auto launch) {
            for (int i = 0; i < ring; i++) launch(buf[i]);  // warm-up
            CK(cudaDeviceSynchronize());
            // Back to back (each launch on the next buffer), then each alone between events.
            CK(cudaEventRecord(e0));
            for (int i = 0; i < reps; i++) launch(buf[i % ring]);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            const double chain = ms * 1e3 / reps;
            std::vector<double> one;
            for (int i = 0; i < reps; i++) {
                CK(cudaEventRecord(e0));
                launch(buf[i % ring]);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                one.push_back(ms * 1e3);
            }
            std::sort(one.begin(), one.end());
            const double med = one[one.size() / 2];
            printf("%-22s %-30s back to back %7.2f us (%6.0f GB/s)   alone median %7.2f us (%6.0f GB/s)\n",
                   s.name, what, chain, bytes / chain * 1e-3, med, bytes / med * 1e-3);
            CK(cudaGetLastError());
        };
        for (int round = 0; round < 2; round++) {
            printf("round %d\n", round);
            run_one("warp-major, 1 trip", [&](u8 *b) { rd_tiles<0, 1><<<blocks, 128>>>(b, s.W, s.T, sink); });
            run_one("trip-major, 1 trip", [&](u8 *b) { rd_tiles<1, 1><<<blocks, 128>>>(b, s.W, s.T, sink); });
            run_one("block-major, 1 trip", [&](u8 *b) { rd_tiles<2, 1><<<blocks, 128>>>(b, s.W, s.T, sink); });
            run_one("warp-major, 2 trips", [&](u8 *b) { rd_tiles<0, 2><<<blocks, 128>>>(b, s.W, s.T, sink); });
            run_one("trip-major, 2 trips", [&](u8 *b) { rd_tiles<1, 2><<<blocks, 128>>>(b, s.W, s.T, sink); });
            const size_t n16 = (size_t)(bytes / 16);
            run_one("plain grid-stride, 5/SM", [&](u8 *b) { rd_stream<8, true><<<5 * sms, 128>>>((const uint4 *)b, n16, sink); });
            run_one("plain grid-stride, 16/SM", [&](u8 *b) { rd_stream<8, true><<<16 * sms, 128>>>((const uint4 *)b, n16, sink); });
        }
    }
    return 0;
}
#endif
