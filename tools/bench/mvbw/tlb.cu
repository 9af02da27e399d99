// tlb: does a decode matvec's DRAM stream pay for address translation? The engine reads each
// matrix once a token, after ~16 GB of other weights, so its pages' translations are cold;
// the other microbenchmarks here read rings of a few buffers, whose translations stay warm.
// A plain read (bench.cuh's rd_stream, evict-first as the engine's weight loads) of a region
// R of S bytes, one launch timed by events, after:
//   warm:  R read, then a 128 MB flush region F (L2 cold, R's translations kept),
//   cold:  R read, then 16 GB of other memory T (L2 and translations cold),
//   touch: as cold, then one word of every 2 MB of R read by one small launch (translations
//          warmed again, L2 still cold: its 64 lines are all it brings in),
//   touch64k: as touch, one word per 64 KB.
// Sizes: the Q/K/V/gate rows (32.6 MB), the output projection (15.3 MB), FFN gate/up
// (149.5 MB). Also the touch launch alone after T (its own cost on a cold region).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT tlb
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

// One 4-byte read per `step` bytes of [p, p + n): warms the translations of R's pages.
__global__ void touch(const u8 *p, size_t n, size_t step, u32 *sink) {
    const size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * step;
    if (i < n && *(const u32 *)(p + i) == 0x12345678u) sink[0] = 1;
}

#ifndef MVBW_DEVICE_ONLY
int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t GB = 1ull << 30, MB = 1ull << 20;
    const size_t total = 17 * GB + 512 * MB;
    u8 *big = nullptr;
    CK(cudaMalloc(&big, total));
    CK(cudaMemset(big, 1, total));
    u32 *sink = nullptr;
    CK(cudaMalloc(&sink, 4));
    u8 *RG = big, *FL = big + 1 * GB, *TH = big + 1 * GB + 256 * MB;
    const size_t FN = 128 * MB, TN = 16 * GB;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int grid = sms * 8, block = 256;
    auto stream = [&](const u8 *p, size_t n) {
        rd_stream<8, true><<<grid, block>>>((const uint4 *)p, n / 16, sink);
    };
    auto timed = [&](auto f) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1e3f;
    };
    const double sizes[] = {32.6e6, 15.3e6, 149.5e6};
    const char *cases[] = {"warm", "cold", "touch", "touch64k"};
    for (double sd : sizes) {
        const size_t S = ((size_t)sd + 15) & ~(size_t)15;
        std::vector<std::vector<float>> us(4);
        std::vector<float> touch_us;
        for (int rep = 0; rep < 12; rep++) {
            for (int c = 0; c < 4; c++) {
                stream(RG, S);
                stream(c == 0 ? FL : TH, c == 0 ? FN : TN);
                if (c >= 2) {
                    const size_t step = c == 2 ? 2 * MB : 64 * 1024;
                    const size_t nt = (S + step - 1) / step;
                    const float t = timed([&] {
                        touch<<<(unsigned)((nt + 255) / 256), 256>>>(RG, S, step, sink);
                    });
                    if (c == 2) touch_us.push_back(t);
                }
                CK(cudaDeviceSynchronize());
                us[c].push_back(timed([&] { stream(RG, S); }));
            }
        }
        CK(cudaGetLastError());
        for (int c = 0; c < 4; c++) {
            std::vector<float> v = us[c];
            std::sort(v.begin(), v.end());
            printf("S %6.1f MB %-9s: median %7.2f us (min %7.2f, max %7.2f) = %.2f TB/s\n",
                   sd / 1e6, cases[c], v[v.size() / 2], v[0], v.back(),
                   sd / (v[v.size() / 2] * 1e-6) / 1e12);
        }
        std::sort(touch_us.begin(), touch_us.end());
        printf("S %6.1f MB touch launch alone (2 MB step, after T): median %.2f us\n", sd / 1e6,
               touch_us[touch_us.size() / 2]);
    }
    // The event pair around an empty launch: the timing's own overhead.
    std::vector<float> ov;
    for (int i = 0; i < 12; i++) ov.push_back(timed([&] { touch<<<1, 32>>>(RG, 0, 1, sink); }));
    std::sort(ov.begin(), ov.end());
    printf("empty launch between events: median %.2f us\n", ov[ov.size() / 2]);
    return 0;
}
#endif
