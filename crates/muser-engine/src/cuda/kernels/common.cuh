// Shared by the matvec kernels (prepended to matvec.cu and q8act.cu at compile time):
// integer types, f16 conversion without toolkit headers, warp reductions, the k-quant 6-bit
// scale unpacking and the multi-row output step.

#define WARPS 4
#define R 4
#define MAX_TOK 8

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The greedy argmax's 64-bit key of value v at index i (mvq1.cu's folded argmax, decoded by
// gather.cu's fed_token and CudaSession::greedy_fed): a larger value gives a larger key, and
// equal values (-0 as +0) the lower index the larger key, as argmax_f32_grid orders them; NaN
// gives 0, which is never chosen over a number (all NaN, or no key: index 0).
__device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
    if (v != v) return 0ull;
    u32 b = __float_as_uint(v == 0.0f ? 0.0f : v);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)b << 32) | (0xffffffffu - (u32)i);
}

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j (0..8) of a Q4_K/Q5_K block.
__device__ __forceinline__ void scale_min_k4(int j, const u8 *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Q6_K in the split layout the decode session keeps (written by mvq1.cu's q6k_split; read by
// the decode matvecs and the batched prefill's dequantization): the 210-byte blocks' parts
// regrouped so that a warp's loop trip over 8 super-blocks of a row loads each part as one
// run of 512 contiguous bytes. Rows go in groups of 4 (the last group padded), a group
// takes q6s_group_bytes; in it, loop trip t (super-blocks 8t .. 8t + m - 1, m = min(8, nb -
// 8t)) takes 4 × (208m + 16) bytes, row r's part of them at r × (208m + 16). In a part, block
// slot s = b % 8 of the trip has, with lane quarter q = 2h + p (h: half, p: 16-byte piece)
// at L = 4s + q: ql[64h + 16p ..+16) at 16L, ql[64h + 32 + 16p ..+16) at 64m + 16L,
// qh[32h + 16p ..+16) at 128m + 16L; its 16 scales at 192m + 16s; its f16 d at 208m + 2s.
// Measured on the H200 (tools/bench/mvbw/ilv.cu, bench/runs/2026-12-01-h200-z z1): the Q6_K
// FFN down projection 6656 x 19968 31.0 → 29.5 µs against the layout before (208-byte blocks
// in file order, every d after them), the same bits.
#define Q6S_TRIP_BYTES (4 * (208 * 8 + 16))
__host__ __device__ __forceinline__ size_t q6s_group_bytes(int nb) {
    return (size_t)4 * (208 * nb + 16 * ((nb + 7) >> 3));
}
// Bytes of an n_out × (256 nb) matrix in the split layout.
__host__ __device__ __forceinline__ size_t q6s_bytes(int n_out, int nb) {
    return (size_t)((n_out + 3) >> 2) * q6s_group_bytes(nb);
}
// Row `row`'s part of the loop trip that holds super-block b, and the trip's block count m.
__device__ __forceinline__ const u8 *q6s_part(const u8 *w, int nb, int row, int b, int *m) {
    const int t = b >> 3;
    *m = min(8, nb - 8 * t);
    return w + (size_t)(row >> 2) * q6s_group_bytes(nb) + (size_t)t * Q6S_TRIP_BYTES +
           (size_t)(row & 3) * (208 * *m + 16);
}
// The split layout in units (`u` units of 4 rows per stream; the LM head for the flat kernel,
// mvq1.cu's mvq_flat_q6ks_lb4, takes u = 4): a stream of 4u rows is laid out as one group of
// 4 virtual rows of u·nb super-blocks, the stream's row 4i + r, super-block b at virtual row
// r, column i·nb + b, so that a flat warp's loop trip (8 columns of its stream) is one tile.
// u = 1 is the layout above. Bytes of an n_out × (256 nb) matrix so laid out:
__host__ __device__ __forceinline__ size_t q6s_bytes_u(int n_out, int nb, int u) {
    return (size_t)((n_out + 4 * u - 1) / (4 * u)) * q6s_group_bytes(u * nb);
}
// Row `row`'s part of the trip that holds its super-block b in the layout in u units, the
// trip's block count m and b's slot s in it.
__device__ __forceinline__ const u8 *q6s_part_u(const u8 *w, int nb, int u, int row, int b,
                                                int *m, int *s) {
    const int c = ((row >> 2) % u) * nb + b;
    *s = c & 7;
    return q6s_part(w, u * nb, 4 * (row / (4 * u)) + (row & 3), c, m);
}
// The FFN gate and up matrices (Q4_K, n_ff rows of nb super-blocks; n_ff % 32 == 0, nb even
// and at least 4) laid out for the flat gate/up launch's warps (mvq1.cu's gu_swiglu_flat<true>;
// round z): warp w of block blk streams four 4-row units u = 4i + w (gate rows 32 blk + 4u ..
// + 3 for u < 8, up rows 32 blk + 4 (u - 8) .. + 3 for u >= 8), super-block b of unit i at
// stream column c = i nb + b, 8 columns (slots) per loop trip t = c / 8. Each matrix holds its
// half of every stream (gate: columns 0 .. 2 nb, up: 2 nb .. 4 nb) as the Q4G_TILES(nb) whole
// tiles of the trips it touches (from trip Q4G_TRIP0(nb, up)), stream 4 blk + w at
// (4 blk + w) Q4G_TILES 4608 (warp-major; the tiles trip-major, tile j of every stream side by
// side, read 1-2 % faster as loads alone, tools/bench/mvbw/rdpat.cu, but made the token 0.5-1 %
// slower: bench/runs/2026-12-02-h200-b b2, b3); a tile is 4 rows x 8 slots x 144 bytes, row r's
// part at 1152 r:
// 8 headers of 16 bytes, then lane L's first and second 16 quant bytes of its quarter k at
// 128 + 16 L and 640 + 16 L (L = 4 slot + k); the slots of the other half's columns (the
// trip that crosses from gate into up, where nb % 4 == 2) stay zero. So every load
// instruction of a trip reads 512 contiguous bytes at constant offsets. Returns row `row`'s
// part of the tile holding its super-block b, and b's slot in it.
#define Q4G_TILES(nb) (((nb) + 3) >> 2)
#define Q4G_TRIP0(nb, up) ((up) ? (nb) >> 2 : 0)
__host__ __device__ __forceinline__ size_t q4g_bytes(int n_ff, int nb) {
    return (size_t)(n_ff >> 3) * Q4G_TILES(nb) * 4608;
}
__device__ __forceinline__ const u8 *q4g_part(const u8 *w, int nb, int up, int row, int b,
                                              int *slot) {
    const int q = row & 31, c = ((q >> 4) + 2 * up) * nb + b;
    *slot = c & 7;
    return w + (size_t)(4 * (row >> 5) + ((q & 15) >> 2)) * Q4G_TILES(nb) * 4608 +
           (size_t)((c >> 3) - Q4G_TRIP0(nb, up)) * 4608 + (size_t)1152 * (q & 3);
}

// Byte o (0 .. 127) of block slot s's ql, its half h = o / 64, in a part of m blocks.
__device__ __forceinline__ int q6s_ql_at(int m, int s, int o) {
    const int h = o >> 6, w = o & 63;
    return (w < 32 ? 0 : 64 * m) + 16 * (4 * s + 2 * h + ((w & 31) >> 4)) + (w & 15);
}
// Byte o (0 .. 63) of block slot s's qh in a part of m blocks.
__device__ __forceinline__ int q6s_qh_at(int m, int s, int o) {
    return 128 * m + 16 * (4 * s + (o >> 4)) + (o & 15);
}

// Writes each token's sum of each of the warp's R rows.
template <int NT>
__device__ __forceinline__ void finish_rows(float (*acc)[NT], int n_tok, float *y, int n_out,
                                            int row0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t < n_tok) {
                float s = warp_sum(acc[r][t]);
                if ((threadIdx.x & 31) == 0 && row0 + r < n_out) y[(size_t)t * n_out + row0 + r] = s;
            }
        }
    }
}

// Quantizes one 32-element block held one value per lane: int8 with d = max|x| / 127 (round
// to nearest), and d × Σq (the sum of the *quantized* values, as ggml's Q8_1 keeps it: the
// k-quant min term then uses the same rounded activations as the quant term, so their large,
// nearly cancelling parts cancel exactly; with the exact sum the error measured 2.6e-4 NMSE).
// Every fused producer (norms, gate, SwiGLU) calls this, so all give the same bits.
__device__ __forceinline__ void quant_block32(float v, int blk, signed char *qa, float *da,
                                              float *sa) {
    const int lane = threadIdx.x & 31;
    float amax = fabsf(v);
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    const int q = __float2int_rn(v * id);
    qa[(size_t)blk * 32 + lane] = (signed char)q;
    const float s = d * warp_sum((float)q);
    if (lane == 0) {
        da[blk] = d;
        sa[blk] = s;
    }
}

// SwiGLU's product silu(g) · u = g / (1 + e^-g) · u, for swiglu_q8 (decode.cu) and the FFN
// gate/up launch that folds it in (mvq1.cu): one definition, so both give the same bits.
__device__ __forceinline__ float silu_mul(float g, float u) {
    return g / (1.0f + expf(-g)) * u;
}

// Token loops are unrolled to NT with a guard so that accumulators stay in registers.
#define FOR_TOKENS _Pragma("unroll") for (int t = 0; t < NT; t++) if (t < n_tok)

__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// Thread-block clusters (sm_90): a barrier over every thread of the cluster (release/acquire:
// shared-memory writes before it are visible to the cluster's blocks after it), and a load
// from another block's shared memory (distributed shared memory). The engine's kernels
// exchange by pushes instead (push_* below: the release arrive compiles to MEMBAR.ALL.GPU, the
// acquire wait to an L1 invalidation); the microbenchmarks of tools/bench/mvbw use these.
__device__ __forceinline__ void cluster_sync_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// The shared-memory address of p (a pointer into this block's shared memory).
__device__ __forceinline__ u32 shared_u32(const void *p) {
    unsigned long long s;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"((unsigned long long)p));
    return (u32)s;
}

// `p` (this block's shared memory) in block `rank` of the cluster.
__device__ __forceinline__ float dsmem_ld(const float *p, u32 rank) {
    float v = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(shared_u32(p)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(r) : "memory");
#endif
    return v;
}

// The halves of a relaxed cluster barrier (no memory ordering: the bare UCGABAR_ARV, and
// UCGABAR_WAIT with its L1 invalidation); every thread of every block of the cluster.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
#endif
}

// A cluster exchange by pushes (sm_90): each block's values are stored into every block's
// shared memory with st.async, which counts their bytes on the receiving block's mbarrier,
// and each block waits on its own mbarrier, then reads what it received locally. The
// release/acquire cluster barrier of a pull exchange (a block's own slot, barrier, remote
// loads) compiles to MEMBAR.ALL.GPU + the barrier + an L1 invalidation; here the only cluster
// barriers are relaxed: one after the mbarriers' set-up (arrived at the start, waited on
// before the first push), and one that keeps every block in the kernel until the whole
// cluster has received (arrived after the receipt, waited on before leaving).
//   push_init(bar, n, bytes)  at the start, every thread (thread 0 sets up the n mbarriers
//                             bar[0 .. n), one per exchange, each for `bytes` bytes)
//   push_ready()              every thread, once, before the block's first push
//   push_f4(dst, rank, v, &bar[k])  any thread: v into block `rank`'s dst (16-byte aligned)
//   push_wait(&bar[k])        every thread: all of exchange k has landed in this block
//   push_done() ... push_leave()  every thread: after its last exchange; before it leaves
// Each exchange's mbarrier completes its phase once: one exchange per mbarrier per launch.
__device__ __forceinline__ void push_init(unsigned long long *bar, int n, u32 bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
        for (int i = 0; i < n; i++) {
            const u32 b = shared_u32(bar + i);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
                         "r"(bytes)
                         : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#endif
    cluster_arrive_relaxed();
}
__device__ __forceinline__ void push_ready() { cluster_wait(); }
__device__ __forceinline__ void push_f4(const float4 *dst, u32 rank, float4 v,
                                        unsigned long long *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    u32 d, b;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(shared_u32(dst)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(b) : "r"(shared_u32(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%2, %3, %4, "
                 "%5}, [%1];" ::"r"(d),
                 "r"(b), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
#endif
}
__device__ __forceinline__ void push_wait(unsigned long long *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const u32 b = shared_u32(bar);
    u32 done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(b)
                     : "memory");
#endif
}
__device__ __forceinline__ void push_done() { cluster_arrive_relaxed(); }
__device__ __forceinline__ void push_leave() { cluster_wait(); }
// This block's rank in its cluster.
__device__ __forceinline__ u32 cluster_rank() {
    u32 r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
    return r;
}

// QK-norm and RoPE of one head, shared by qk_norm_rope_store (decode.cu) and the Q/K/V/gate
// segment kernel that folds it in (mvq1.cu), so that both give the same bits.
// The sum of squares is taken in qk_norm_rope_store's order: 64 threads, thread t summing
// elements t, t + 64, ... (a fused multiply-add each), then the warps' butterfly sums, warp 0's
// plus warp 1's (block_sum's order for two warps). Lane l of one warp plays threads l and
// l + 32 here; `head(i)` reads element i.
template <typename F>
__device__ __forceinline__ float head_sumsq(int hd, F head) {
    const int lane = threadIdx.x & 31;
    float s0 = 0.0f, s1 = 0.0f;
    for (int i = lane; i < hd; i += 64) {
        const float x = head(i);
        s0 = __fmaf_rn(x, x, s0);
    }
    for (int i = lane + 32; i < hd; i += 64) {
        const float x = head(i);
        s1 = __fmaf_rn(x, x, s1);
    }
    return warp_sum(s0) + warp_sum(s1);
}

// Elements (x0, x1) = (2i, 2i + 1) of a head: RMS-normed (scale = rsqrt(mean square + eps)),
// times the norm weights (w0, w1), then rotated by (c, s) = (cos θ_i, sin θ_i) when `rope`.
// Each product rounded on its own (no contraction), as written.
__device__ __forceinline__ float2 qk_pair(float x0, float x1, float scale, float w0, float w1,
                                          int rope, float c, float s) {
    const float a = __fmul_rn(__fmul_rn(x0, scale), w0);
    const float b = __fmul_rn(__fmul_rn(x1, scale), w1);
    if (!rope) return make_float2(a, b);
    return make_float2(__fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)),
                       __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c)));
}

// An L2 cache policy marking lines evict-first (for data read once per token: the weights,
// the long caches' KV rows), as the operand of an `.L2::cache_hint` load.
__device__ __forceinline__ unsigned long long l2_evict_first() {
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}

// L2 prefetch ranges as kernel arguments: four (address, bytes) pairs; bytes 0: none. Used by
// the latency-bound launches' extra blocks (prefetch.cu) and by the matvecs' tail prefetch
// (mvq1.cu, DecodeTuning::tail_prefetch).
#define PF_ARGS                                                                                \
    const u8 *pp0, int pn0, const u8 *pp1, int pn1, const u8 *pp2, int pn2, const u8 *pp3, int pn3
// The arguments PF_ARGS names, passed on.
#define PF_PASS pp0, pn0, pp1, pn1, pp2, pn2, pp3, pn3

// Block `part` of `parts` issues `prefetch.global.L2` for its share of the 128-byte lines of
// the four ranges (pp_i, pn_i bytes; pn_i = 0: none).
__device__ __forceinline__ void prefetch_ranges(PF_ARGS, int part, int parts) {
    const u8 *p[4] = {pp0, pp1, pp2, pp3};
    const int n[4] = {pn0, pn1, pn2, pn3};
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int lines = (n[r] + 127) >> 7;
        for (int i = part * blockDim.x + threadIdx.x; i < lines; i += parts * blockDim.x)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p[r] + (size_t)i * 128));
    }
}
