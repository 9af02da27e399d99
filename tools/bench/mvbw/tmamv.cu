// tmamv: one Q4_K matvec per launch with the weights staged through shared memory (stage.cu's
// machinery: a producer warp copies the block's contiguous share of rows tile by tile with
// cp.async.bulk into a ring of slots; 16 consumer warps compute each tile against the int8 row
// held in shared memory), against the engine's one-matrix kernel (mvq_one_q4k_lb5, one warp
// per block, 4 rows per warp) on the decode step's shapes. The question (issue 4, round v): is
// a kernel launch's ramp and tail (~3-6 µs for a 75-150 MB read with plain loads) shorter when
// one block per SM streams an equal share through the bulk-copy engine? Weight sets rotate
// through 1.2 GB so that every launch reads DRAM. Prints µs per launch (median of 7 × 40
// back-to-back launches) and the outputs' largest absolute difference from the engine's
// (beside the largest output).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT tmamv
#define STAGE_NO_MAIN
#include "stage.cu"

// y = W · act for the n rows of W (Q4_K, NB super-blocks per row): block b takes rows
// [n·b/G, n·(b+1)/G) in tiles of RT rows; units of G_ rows × TPU trips (stage.cu's tile_rows).
// LO: 0 the arithmetic; 2 the stream alone (the consumers release the tiles unread).
template <int CW, int NS, int RT, int G_, int TPU, int NB, int LO>
__global__ void __launch_bounds__(CW * 32 + 32, 1)
    tma_mv(const u8 *W, int n, const signed char *qa_g, const float *da_g, const float *sa_g,
           float *y) {
    constexpr int RB = NB * 144, SLOT = (RT * RB + 127) / 128 * 128, MT = CW * 32;
    extern __shared__ __align__(128) u8 smem[];
    u8 *ring = smem;
    unsigned long long *full = (unsigned long long *)(smem + (size_t)NS * SLOT);
    unsigned long long *empty = full + NS;
    signed char *qa = (signed char *)(empty + NS);  // [NB * 256], swizzled
    float *da = (float *)(qa + NB * 256), *sa = da + NB * 8;
    float *outs = sa + NB * 8;  // [1024]: the block's rows
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int lo, hi;
    share(n, lo, hi);
    const int nt = (hi - lo + RT - 1) / RT;  // (outs holds 1,024 rows: at most n / G per block)
    ring_init(full, empty, NS, CW);
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) outs[i] = 0.0f;
    __syncthreads();
    if (warp == CW) {
        if (lane == 0) {
            const unsigned long long pol = l2_evict_first();
            for (int i = 0; i < nt; i++) {
                const u32 s = i % NS, u = i / NS;
                if (u > 0) mbar_wait(empty + s, (u - 1) & 1);
                const int rows = min(RT, hi - lo - i * RT);
                mbar_expect(full + s, (u32)(rows * RB));
                bulk_copy(ring + (size_t)s * SLOT, W + (size_t)(lo + i * RT) * RB, (u32)(rows * RB),
                          full + s, pol);
            }
        }
        return;
    }
    for (int i = threadIdx.x; i < NB * 16; i += MT)
        *(uint4 *)(qa + swz<true>(16 * i)) = __ldcg((const uint4 *)qa_g + i);
    for (int i = threadIdx.x; i < NB * 8; i += MT) {
        da[i] = __ldcg(da_g + i);
        sa[i] = __ldcg(sa_g + i);
    }
    cbar<CW>();
    for (int i = 0; i < nt; i++) {
        const u32 s = i % NS;
        mbar_wait(full + s, (i / NS) & 1);
        tile_rows<CW, G_, TPU, NB, LO != 0, true>(ring + (size_t)s * SLOT,
                                                   min(RT, hi - lo - i * RT), qa, da, sa,
                                                   outs + i * RT, empty + s, (u32)i);
    }
    cbar<CW>();
    for (int j = threadIdx.x; j < hi - lo; j += MT) y[lo + j] = outs[j];
}

template <int CW, int NS, int RT, int NB>
constexpr size_t tma_smem() {
    return (size_t)NS * ((RT * NB * 144 + 127) / 128 * 128) + 16 * NS + NB * 256 + NB * 64 + 4096;
}

#ifndef MVBW_DEVICE_ONLY
struct Pool {
    u8 *base;
    size_t bytes;
};

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Pool pool{nullptr, (size_t)1200 << 20};
    CK(cudaMalloc(&pool.base, pool.bytes));
    fill_q4k<<<4096, 256>>>(pool.base, pool.bytes / 144, 3);
    signed char *qa;
    float *da, *sa, *y0, *y1;
    act_i8(&qa, &da, &sa, 19968);
    CK(cudaMalloc(&y0, 40000 * 4));
    CK(cudaMalloc(&y1, 40000 * 4));
    CK(cudaDeviceSynchronize());
    printf("SMs %d; weight sets rotate through %zu MB\n", sms, pool.bytes >> 20);

    auto run = [&](const char *name, int n, auto nb_c, auto rt_c, auto ns_c, auto tpu_c) {
        constexpr int NB = decltype(nb_c)::value, RT = decltype(rt_c)::value;
        constexpr int NS = decltype(ns_c)::value, TPU = decltype(tpu_c)::value;
        const size_t bytes = (size_t)n * NB * 144;
        const int sets = (int)(pool.bytes / bytes);
        auto w = [&](int i) { return pool.base + (size_t)(i % sets) * bytes; };
        auto kA = tma_mv<16, NS, RT, 1, TPU, NB, 0>;
        auto kS = tma_mv<16, NS, RT, 1, TPU, NB, 2>;
        constexpr size_t smem = tma_smem<16, NS, RT, NB>();
        CK(cudaFuncSetAttribute(kA, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(kS, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const int n_in = NB * 256;
        auto eng = [&](int i) { mvq_one_q4k_lb5<<<n / 4, 32>>>(w(i), n, y0, qa, da, sa, n_in); };
        auto tma = [&](int i) { kA<<<sms, 16 * 32 + 32, smem>>>(w(i), n, qa, da, sa, y1); };
        auto str = [&](int i) { kS<<<sms, 16 * 32 + 32, smem>>>(w(i), n, qa, da, sa, y1); };
        const double te = time_us(eng, 40), tt = time_us(tma, 40), ts = time_us(str, 40);
        // Outputs of set 0.
        eng(0);
        tma(0);
        CK(cudaDeviceSynchronize());
        std::vector<float> a(n), b(n);
        CK(cudaMemcpy(a.data(), y0, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), y1, n * 4, cudaMemcpyDeviceToHost));
        double md = 0, mx = 0;
        for (int i = 0; i < n; i++) {
            md = std::max(md, (double)fabsf(a[i] - b[i]));
            mx = std::max(mx, (double)fabsf(a[i]));
        }
        printf("%-22s %5d x %5d (%6.1f MB) RT %2d NS %d TPU %d smem %6zu: engine %7.2f us %7.1f GB/s | "
               "staged %7.2f us %7.1f GB/s | stream only %7.2f us %7.1f GB/s | max|dy| %.3g of %.3g\n",
               name, n, n_in, bytes / 1e6, RT, NS, TPU, smem, te, bytes / te / 1e3, tt,
               bytes / tt / 1e3, ts, bytes / ts / 1e3, md, mx);
    };
    for (int rep = 0; rep < 2; rep++) {
        run("FFN down", 6656, IntC<78>{}, IntC<4>{}, IntC<4>{}, IntC<3>{});
        run("FFN down", 6656, IntC<78>{}, IntC<2>{}, IntC<8>{}, IntC<3>{});
        run("FFN down", 6656, IntC<78>{}, IntC<1>{}, IntC<16>{}, IntC<2>{});
        run("FFN gate+up rows", 39936, IntC<26>{}, IntC<16>{}, IntC<3>{}, IntC<4>{});
        run("FFN gate+up rows", 39936, IntC<26>{}, IntC<8>{}, IntC<6>{}, IntC<4>{});
        run("Q/K/V/gate", 8704, IntC<26>{}, IntC<16>{}, IntC<3>{}, IntC<4>{});
        run("Q/K/V/gate", 8704, IntC<26>{}, IntC<4>{}, IntC<12>{}, IntC<4>{});
        run("output projection", 6656, IntC<16>{}, IntC<16>{}, IntC<4>{}, IntC<2>{});
        run("output projection", 6656, IntC<16>{}, IntC<4>{}, IntC<16>{}, IntC<2>{});
    }
    return 0;
}
#endif
