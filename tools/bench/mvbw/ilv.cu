// ilv: the decode matvecs' Q4_K weights in other layouts, against the engine's kernels on the
// file's layout, DRAM-cold (weight sets rotating through > 400 MB). Layouts: "file" (a row's
// super-blocks one after another); "ilv4" (each group of 4 rows' super-blocks interleaved:
// block (row, b) at ((row / 4) · nb + b) · 4 + row % 4, so that a warp's loop trip of 8
// super-blocks × 4 rows is one contiguous 4,608-byte run, with each block as in the file);
// "tiled" (bench.cuh's q4k_tile: the trip's run re-ordered so that every load instruction of
// the warp covers 512 contiguous bytes). Shapes: the one-matrix launch (mvq_one_q4k_lb5's warps
// and loop) on the FFN down projection, the output projection and the Q/K/V/gate rows; the flat
// FFN gate/up launch (mvq_gu_swiglu_flat) in all three; the Q6_K down projection
// (mvq_one_q6ks_lb4) on the engine's split layout against the split layout before round z
// (blocks in file order; z1 measured the engine's before and this layout as "tiled"). Every
// variant is checked bit for bit against the engine's kernel.
// z7 added the gate/up pair as one buffer of flat-warp streams ("stream (gate+up)"), z8 the
// engine's gate/up streams (each matrix its half, read by mvq_gu_swiglu_flat_gs).
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT ilv
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

#define L_FILE 0
#define L_ILV4 1
#define L_TILED 2
#define L_STREAM 3

// The FFN gate and up matrices as one buffer of flat-warp streams (round z): block blk of the
// flat launch (rows 32 blk .. + 31 of both), warp w: stream 4 blk + w of its four units u =
// 4i + w (gate rows 32 blk + 4u .. + 3 for u < 8, else up rows 32 blk + 4 (u - 8) ..), as the
// 4-unit split-Q6_K layout does for the LM head: stream column c = i nb + b, trip c / 8 one
// tile of 4 rows x 8 slots x 144 bytes, row r's part at r x 1152 (8 headers of 16 bytes, then
// lane L's first and second 16 quant bytes at 128 + 16 L and 640 + 16 L). Needs 4 nb % 8 == 0
// and n_ff % 32 == 0. One thread per (matrix, row, block).
__global__ void q4k_gu_stream(const u8 *wg, const u8 *wu, u8 *dst, int n_ff, int nb) {
    const long long n = 2ll * n_ff * nb;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n;
         t += (long long)gridDim.x * blockDim.x) {
        const int up = (int)(t / ((long long)n_ff * nb));
        const long long e = t - (long long)up * n_ff * nb;
        const int row = (int)(e / nb), b = (int)(e % nb);
        const int q = row & 31, w = (q & 15) >> 2, r = q & 3, i = (q >> 4) + 2 * up;
        const int c = i * nb + b, j = c >> 3, sl = c & 7;
        const u8 *blk = (up ? wu : wg) + e * 144;
        u8 *part = dst + (size_t)(4 * (row >> 5) + w) * 16 * nb * 144 + (size_t)j * 4608 +
                   (size_t)r * 1152;
        *(uint4 *)(part + 16 * sl) = *(const uint4 *)blk;
        for (int k = 0; k < 4; k++) {
            *(uint4 *)(part + 128 + 16 * (4 * sl + k)) = *(const uint4 *)(blk + 16 + 32 * k);
            *(uint4 *)(part + 640 + 16 * (4 * sl + k)) = *(const uint4 *)(blk + 32 + 32 * k);
        }
    }
}

// Block (row, b) of an ilv4 matrix.
__device__ __forceinline__ size_t ilv4_block(int row, int b, int nb) {
    return ((size_t)(row >> 2) * nb + b) * 4 + (row & 3);
}

// File layout → ilv4; one thread per 16-byte word. n_out % 4 == 0.
__global__ void q4k_ilv4(const uint4 *src, uint4 *dst, int n_out, int nb) {
    const unsigned long long n = (unsigned long long)n_out * nb * 9;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long bi = i / 9;
        const int part = (int)(i % 9), row = (int)(bi / nb), b = (int)(bi % nb);
        dst[ilv4_block(row, b, nb) * 9 + part] = src[i];
    }
}

// mvq_one_q4k_lb5 over layout L (file, ilv4 or tiled): the same warps, loop and arithmetic.
template <int L>
__global__ void __launch_bounds__(128, 5)
    one_v(const u8 *w, int n_out, float *y, const signed char *qa, const float *da, const float *sa,
          int n_in) {
    const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 4;
    if (row0 >= n_out) return;
    if (L == L_TILED) {
        q4k_rows_tiled<true>(w, qa, da, sa, y + row0, n_in, n_out, row0);
        return;
    }
    Q4K_LANE(4);
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 hd[4], q0[4], q1[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int row = min(row0 + r, n_out - 1);
            const u8 *blk = L == L_FILE ? w + (size_t)row * row_bytes + (size_t)b * 144
                                        : w + ilv4_block(row, b, nb) * 144;
            Q4K_LOAD(blk, k, hd[r], q0[r], q1[r]);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
#pragma unroll
        for (int r = 0; r < 4; r++) acc[r] += q4k_term(hd[r], q0[r], q1[r], x, sh, upper);
    }
    Q4K_STORE(4, acc, y + row0, row0, n_out);
}

// mvq_gu_swiglu_flat over layout L: gu_swiglu_flat with the block address of L (tiled: a trip
// that crosses from one unit into the next reads two tiles, each part contiguous).
template <int L>
__global__ void __launch_bounds__(128, 5)
    gu_flat_v(const u8 *wg, const u8 *wu, int n_ff, float *h, const signed char *qa,
              const float *da, const float *sa, int n_in, signed char *qo, float *dout,
              float *so) {
    __shared__ float gu[64];
    const int warp = threadIdx.x >> 5, r0 = blockIdx.x * 32, lane = threadIdx.x & 31;
    const int nb = n_in >> 8, k = lane & 3, s = lane >> 2, sh = 16 * (k & 1);
    const bool upper = k >= 2;
    const size_t row_bytes = (size_t)nb * 144, rstep = L == L_FILE ? row_bytes : 144;
    const int total = GU_PASSES * nb;
    float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int done = 0;
    for (int g0 = 0; g0 < total; g0 += 8) {
        const int g = min(g0 + s, total - 1);
        const int i = g / nb, b = g - i * nb, u = i * 4 + warp, row = r0 + 4 * (u & 7);
        const u8 *base = u < 8 ? wg : wu;
        uint4 hd[4], q0[4], q1[4];
        if (L == L_STREAM) {
            // The warp's stream; this trip is its tile g0 / 8 (wg: the fused buffer).
            const u8 *tile = wg + (size_t)(4 * blockIdx.x + warp) * 16 * nb * 144 +
                             (size_t)(g0 >> 3) * 4608;
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const u8 *part = tile + r * 1152;
                hd[r] = ld_w16(part + 16 * s);
                q0[r] = ld_w16(part + 128 + 16 * lane);
                q1[r] = ld_w16(part + 640 + 16 * lane);
            }
        } else if (L == L_TILED) {
            // Super-block b is slot b % 8 of trip b / 8's tile (m blocks) of the row group.
            const int t = b >> 3, sp = b & 7, m = min(8, nb - 8 * t), lq = 16 * (4 * sp + k);
            const u8 *tile = base + (size_t)(row >> 2) * 4 * nb * 144 + (size_t)t * 4608;
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const u8 *part = tile + r * m * 144;
                hd[r] = ld_w16(part + 16 * sp);
                q0[r] = ld_w16(part + 16 * m + lq);
                q1[r] = ld_w16(part + 80 * m + lq);
            }
        } else {
            const u8 *w = L == L_FILE ? base + (size_t)row * row_bytes + (size_t)b * 144
                                      : base + ((size_t)(row >> 2) * nb + b) * 576;
#pragma unroll
            for (int r = 0; r < 4; r++) Q4K_LOAD(w + r * rstep, k, hd[r], q0[r], q1[r]);
        }
        Q4K_ACT(x, qa, da, sa, b, k);
        const bool valid = g0 + s < total, odd = i & 1;
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const float t = q4k_term<true>(hd[r], q0[r], q1[r], x, sh, upper);
            if (valid && !odd) acc0[r] += t;
            if (valid && odd) acc1[r] += t;
        }
        done = flat_units_done<4, GU_PASSES>(done, nb, g0, acc0, acc1, [&](int u, int r, float v) {
            if (lane == 0) gu[4 * (u * 4 + warp) + r] = v;
        });
    }
    __syncthreads();
    gu_swiglu_store(gu, warp, r0, h, qo, dout, so);
}

// The Q6_K split layout before round z (208-byte blocks in file order, every d after them)
// → the split layout of common.cuh (each load instruction of a warp 512 contiguous bytes),
// one thread per (row, block); n_out % 4 == 0.
__global__ void q6ks_old_to_new(const u8 *src, u8 *dst, int n_out, int nb) {
    const long long n = (long long)n_out * nb;
    const u16 *dv = (const u16 *)(src + (size_t)n * 208);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int row = (int)(i / nb), b = (int)(i % nb), s = b & 7;
        int m;
        u8 *part = (u8 *)q6s_part(dst, nb, row, b, &m);
        const u8 *blk = src + i * 208;
        for (int q = 0; q < 4; q++) {
            const int h = q >> 1, p = q & 1, L = 4 * s + q;
            *(uint4 *)(part + 16 * L) = *(const uint4 *)(blk + 64 * h + 16 * p);
            *(uint4 *)(part + 64 * m + 16 * L) = *(const uint4 *)(blk + 64 * h + 32 + 16 * p);
            *(uint4 *)(part + 128 * m + 16 * L) = *(const uint4 *)(blk + 128 + 32 * h + 16 * p);
        }
        *(uint4 *)(part + 192 * m + 16 * s) = *(const uint4 *)(blk + 192);
        *(u16 *)(part + 208 * m + 2 * s) = dv[i];
    }
}

// mvq_one_q6ks_lb4 as it was before round z, over the split layout of then.
__global__ void __launch_bounds__(128, 4)
    one_q6_old(const u8 *w, int n_out, float *y, const signed char *qa, const float *da,
               const float *sa, int n_in) {
    constexpr int RR = 4;
    const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * RR;
    if (row0 >= n_out) return;
    const int post = 0;
    const float scale = 1.0f, cap = 0.0f;
    Q6KS_LANE(RR);
    const u16 *dv = (const u16 *)(w + (size_t)n_out * nb * 208);
    for (int b = lane >> 2; b < nb; b += 8) {
        uint4 lo[RR], hi[RR], qh[RR];
        uint2 sc[RR];
        float d[RR];
#pragma unroll
        for (int r = 0; r < RR; r++) {
            const size_t bi = (size_t)min(row0 + r, n_out - 1) * nb + b;
            const u8 *blk = w + bi * 208;
            lo[r] = ld_w16(blk + 64 * h + 16 * p);
            hi[r] = ld_w16(blk + 64 * h + 32 + 16 * p);
            qh[r] = ld_w16(blk + 128 + 32 * h + 16 * p);
            sc[r] = *(const uint2 *)(blk + 192 + 8 * h);
            d[r] = h2f(dv[bi]);
        }
        Q6KS_ACT(b)
#pragma unroll
        for (int r = 0; r < RR; r++)
            acc[r] += q6ks_term(lo[r], hi[r], qh[r], sc[r], d[r], a, dx, a32, p);
    }
    y += row0;
    ROWS_STORE(RR)
}

#ifndef MVBW_DEVICE_ONLY
static const char *LNAME[4] = {"file", "ilv4", "tiled", "stream (gate+up)"};

// Weight sets of one matrix shape in the three layouts (sets[l][i]).
struct Sets {
    int n_out, n_in, count;
    size_t bytes;
    std::vector<u8 *> l[3];
    Sets(int n_out_, int n_in_, size_t min_total, u32 seed) : n_out(n_out_), n_in(n_in_) {
        const int nb = n_in / 256;
        bytes = (size_t)n_out * nb * 144;
        count = (int)std::max<size_t>(2, (min_total + bytes - 1) / bytes);
        for (int i = 0; i < count; i++) {
            for (int L = 0; L < 3; L++) {
                u8 *p;
                CK(cudaMalloc(&p, bytes));
                l[L].push_back(p);
            }
            fill_q4k<<<1024, 256>>>(l[0][i], bytes / 144, seed + i);
            q4k_ilv4<<<1024, 256>>>((const uint4 *)l[0][i], (uint4 *)l[1][i], n_out, nb);
            q4k_tile<<<1024, 256>>>(l[0][i], l[2][i], n_out, nb);
        }
        CK(cudaDeviceSynchronize());
    }
};

typedef void (*OneK)(const u8 *, int, float *, const signed char *, const float *, const float *,
                     int);
typedef void (*GuK)(const u8 *, const u8 *, int, float *, const signed char *, const float *,
                    const float *, int, signed char *, float *, float *);

// Outputs of n floats on the device compared in bits with the host copy `ref`.
static void check(const char *what, const float *dev, const std::vector<float> &ref) {
    std::vector<float> v(ref.size());
    CK(cudaMemcpy(v.data(), dev, v.size() * 4, cudaMemcpyDeviceToHost));
    int diff = 0, nan = 0;
    for (size_t i = 0; i < v.size(); i++) {
        diff += memcmp(&v[i], &ref[i], 4) != 0;
        nan += v[i] != v[i];
    }
    printf("check %-36s %d of %zu outputs differ in bits, %d NaN\n", what, diff, v.size(), nan);
}

int main() {
    signed char *qa, *qo;
    float *da, *sa, *y, *h, *dout, *so;
    act_i8(&qa, &da, &sa, 19968);
    CK(cudaMalloc(&y, 19968 * 4));
    CK(cudaMalloc(&h, 19968 * 4));
    CK(cudaMalloc(&qo, 19968));
    CK(cudaMalloc(&dout, 19968 / 32 * 4));
    CK(cudaMalloc(&so, 19968 / 32 * 4));
    const size_t min_total = 420ull << 20;
    struct Shape {
        const char *name;
        int n_out, n_in;
    } shapes[] = {{"down 6656x19968", 6656, 19968},
                  {"o_proj 6656x4096", 6656, 4096},
                  {"qkvg 8704x6656", 8704, 6656}};
    OneK one[3] = {one_v<L_FILE>, one_v<L_ILV4>, one_v<L_TILED>};
    for (auto &sh : shapes) {
        Sets s(sh.n_out, sh.n_in, min_total, 11);
        const int grid = sh.n_out / 4;  // one warp per block, as the session launches it
        std::vector<float> ref(sh.n_out);
        mvq_one_q4k_lb5<<<grid, 32>>>(s.l[0][0], sh.n_out, y, qa, da, sa, sh.n_in);
        CK(cudaMemcpy(ref.data(), y, ref.size() * 4, cudaMemcpyDeviceToHost));
        for (int L = 0; L < 3; L++) {
            CK(cudaMemset(y, 0, sh.n_out * 4));
            one[L]<<<grid, 32>>>(s.l[L][0], sh.n_out, y, qa, da, sa, sh.n_in);
            CK(cudaGetLastError());
            char what[96];
            snprintf(what, sizeof what, "%s %s", sh.name, LNAME[L]);
            check(what, y, ref);
        }
        const int reps = std::max(24, 2 * s.count);
        for (int round = 0; round < 3; round++) {
            const double te = time_us([&](int i) {
                mvq_one_q4k_lb5<<<grid, 32>>>(s.l[0][i % s.count], sh.n_out, y, qa, da, sa, sh.n_in);
            }, reps);
            printf("round %d %-18s %-22s %8.2f us %7.1f GB/s (%d sets)\n", round, sh.name,
                   "engine (file)", te, s.bytes / te * 1e-3, s.count);
            for (int L = 0; L < 3; L++) {
                const double t = time_us([&](int i) {
                    one[L]<<<grid, 32>>>(s.l[L][i % s.count], sh.n_out, y, qa, da, sa, sh.n_in);
                }, reps);
                printf("round %d %-18s %-22s %8.2f us %7.1f GB/s\n", round, sh.name, LNAME[L], t,
                       s.bytes / t * 1e-3);
            }
        }
        for (int L = 0; L < 3; L++)
            for (auto p : s.l[L]) CK(cudaFree(p));
    }
    // The flat FFN gate/up launch: gate and up, 19968 x 6656 each.
    {
        const int n_ff = 19968, n_in = 6656, grid = n_ff / 32;
        Sets g(n_ff, n_in, min_total / 2, 21), u(n_ff, n_in, min_total / 2, 41);
        const int count = std::min(g.count, u.count);
        std::vector<float> ref(n_ff);
        mvq_gu_swiglu_flat<<<grid, 128>>>(g.l[0][0], u.l[0][0], n_ff, h, qa, da, sa, n_in, qo, dout,
                                          so);
        CK(cudaMemcpy(ref.data(), h, ref.size() * 4, cudaMemcpyDeviceToHost));
        GuK gk[4] = {gu_flat_v<L_FILE>, gu_flat_v<L_ILV4>, gu_flat_v<L_TILED>,
                     gu_flat_v<L_STREAM>};
        // The fused stream buffers, from the file-layout sets.
        std::vector<u8 *> st(count);
        for (int i = 0; i < count; i++) {
            CK(cudaMalloc(&st[i], 2 * g.bytes));
            q4k_gu_stream<<<1024, 256>>>(g.l[0][i], u.l[0][i], st[i], n_ff, n_in / 256);
        }
        CK(cudaDeviceSynchronize());
        // The engine's gate/up streams (each matrix its half: q4k_gu_streams), read by
        // mvq_gu_swiglu_flat_gs.
        std::vector<u8 *> eg(count), eu(count);
        for (int i = 0; i < count; i++) {
            const size_t gsb = q4g_bytes(n_ff, n_in / 256);
            CK(cudaMalloc(&eg[i], gsb));
            CK(cudaMalloc(&eu[i], gsb));
            CK(cudaMemset(eg[i], 0, gsb));
            CK(cudaMemset(eu[i], 0, gsb));
            q4k_gu_streams<<<1024, 256>>>(g.l[0][i], eg[i], n_ff, n_in / 256, 0);
            q4k_gu_streams<<<1024, 256>>>(u.l[0][i], eu[i], n_ff, n_in / 256, 1);
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemset(h, 0, n_ff * 4));
        mvq_gu_swiglu_flat_gs<<<grid, 128>>>(eg[0], eu[0], n_ff, h, qa, da, sa, n_in, qo, dout, so);
        CK(cudaGetLastError());
        check("gate/up flat engine streams", h, ref);
        auto wg_of = [&](int L, int i) { return L == L_STREAM ? st[i] : g.l[L][i]; };
        auto wu_of = [&](int L, int i) { return L == L_STREAM ? st[i] : u.l[L][i]; };
        for (int L = 0; L < 4; L++) {
            CK(cudaMemset(h, 0, n_ff * 4));
            gk[L]<<<grid, 128>>>(wg_of(L, 0), wu_of(L, 0), n_ff, h, qa, da, sa, n_in, qo, dout, so);
            CK(cudaGetLastError());
            char what[96];
            snprintf(what, sizeof what, "gate/up flat %s", LNAME[L]);
            check(what, h, ref);
        }
        const double bytes = 2.0 * g.bytes;
        for (int round = 0; round < 3; round++) {
            const double te = time_us([&](int i) {
                mvq_gu_swiglu_flat<<<grid, 128>>>(g.l[0][i % count], u.l[0][i % count], n_ff, h, qa,
                                                  da, sa, n_in, qo, dout, so);
            }, 24);
            printf("round %d %-18s %-22s %8.2f us %7.1f GB/s (%d sets)\n", round, "gate/up flat",
                   "engine (file)", te, bytes / te * 1e-3, count);
            for (int L = 0; L < 4; L++) {
                const double t = time_us([&](int i) {
                    gk[L]<<<grid, 128>>>(wg_of(L, i % count), wu_of(L, i % count), n_ff, h, qa, da,
                                         sa, n_in, qo, dout, so);
                }, 24);
                printf("round %d %-18s %-22s %8.2f us %7.1f GB/s\n", round, "gate/up flat", LNAME[L],
                       t, bytes / t * 1e-3);
            }
            const double tg = time_us([&](int i) {
                mvq_gu_swiglu_flat_gs<<<grid, 128>>>(eg[i % count], eu[i % count], n_ff, h, qa, da,
                                                     sa, n_in, qo, dout, so);
            }, 24);
            printf("round %d %-18s %-22s %8.2f us %7.1f GB/s\n", round, "gate/up flat",
                   "engine streams (_gs)", tg, bytes / tg * 1e-3);
        }
    }
    // The Q6_K FFN down projection (6656 x 19968): the engine's mvq_one_q6ks_lb4 on its split
    // layout against the same loop on the split layout before round z.
    {
        const int n_out = 6656, n_in = 19968, nb = n_in / 256, grid = n_out / 4;
        const size_t nbl = (size_t)n_out * nb, old_bytes = nbl * 210;
        const int count = (int)((min_total + old_bytes - 1) / old_bytes);
        std::vector<u8 *> l[2];
        for (int i = 0; i < count; i++) {
            u8 *a, *b;
            CK(cudaMalloc(&a, old_bytes));
            CK(cudaMalloc(&b, q6s_bytes(n_out, nb)));
            fill_q4k<<<1024, 256>>>(a, old_bytes / 144, 61 + i);
            fill_d16<<<1024, 256>>>((u16 *)(a + nbl * 208), nbl);
            q6ks_old_to_new<<<1024, 256>>>(a, b, n_out, nb);
            l[0].push_back(a);
            l[1].push_back(b);
        }
        CK(cudaDeviceSynchronize());
        std::vector<float> ref(n_out);
        one_q6_old<<<grid, 32>>>(l[0][0], n_out, y, qa, da, sa, n_in);
        CK(cudaMemcpy(ref.data(), y, ref.size() * 4, cudaMemcpyDeviceToHost));
        OneK q6[2] = {one_q6_old, mvq_one_q6ks_lb4};
        const char *q6name[2] = {"split before z", "engine (split)"};
        CK(cudaMemset(y, 0, n_out * 4));
        q6[1]<<<grid, 32>>>(l[1][0], n_out, y, qa, da, sa, n_in);
        CK(cudaGetLastError());
        check("down Q6_K engine vs before z", y, ref);
        for (int round = 0; round < 3; round++) {
            for (int T = 0; T < 2; T++) {
                const double t = time_us([&](int i) {
                    q6[T]<<<grid, 32>>>(l[T][i % count], n_out, y, qa, da, sa, n_in);
                }, 24);
                printf("round %d %-18s %-22s %8.2f us %7.1f GB/s (%d sets)\n", round, "down Q6_K",
                       q6name[T], t, old_bytes / t * 1e-3, count);
            }
        }
    }
    return 0;
}
#endif
