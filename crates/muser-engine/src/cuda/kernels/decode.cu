// Element-wise, normalisation and attention kernels of one decode step (f32 throughout,
// single sequence), so that a whole token runs on the GPU between one upload of the embedding
// row and one download of the logits.
//
// Sizes are small (one row of 6656, 32 heads), so each kernel is one or a few thread blocks;
// launch overhead, not bandwidth, is what these cost, which is why the step is captured as a
// CUDA graph: everything that changes from step to step (position, ring slots, window) is
// read from device memory.

// `common.cuh` (types, h2f, warp_sum) is prepended at compile time.

__device__ __forceinline__ float block_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < n_warps ? shared[threadIdx.x] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}

__device__ __forceinline__ float block_max(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < n_warps ? shared[threadIdx.x] : -3.0e38f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}

// l = cap * tanh(l * scale / cap) (cap 0: l * scale), element-wise.
extern "C" __global__ void scale_softcap(float *l, int n, float scale, float cap) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = l[i] * scale;
        l[i] = cap != 0.0f ? cap * tanhf(v / cap) : v;
    }
}

// Deterministic pseudo-random f16 values in [-1, 1) (index hash): fills a KV cache for
// long-context benchmarks without running the prefill.
extern "C" __global__ void fill_random_f16(u16 *dst, unsigned long long n, unsigned int seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        u32 h = (u32)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        const float f = (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f;
        dst[i] = f2h(f);
    }
}

// Split-K flash-decode attention, first pass: block (h, s) runs an online softmax over its
// share of the window's rows (oldest first: row j of the window is slot (first + j) % cap) and
// writes (max, sum, unnormalised output[hd]) to `part[(h * n_split + s) * (hd + 2)]`.
//
// Each warp takes 32 rows at a time. Scores: lane l takes row c0 + l whole (HD / 8 16-byte K
// loads, all issued before any use; q from shared memory); the chunk's softmax update is one
// warp max and one warp sum. Values: lane l owns output dimensions [l * D, l * D + D) (D =
// HD / 32) and reads them from all 32 rows of the chunk (one 2-8-byte load per row, all
// issued before any use). Two memory round trips per 32 rows; walking one row at a time (a
// dependent load, a warp reduction and two exps per row) measured 13 µs per layer at depth 0
// and 110 µs at depth 32768 on the H200. The four warps' partials are merged through shared
// memory. Empty shares write max = -3e38, sum = 0.
// Most split-K shares per head (the host's `splits` clamp).
#define MAX_SPLITS 1024
// attend_merge, then the sigmoid gate (a *= sigmoid(g), as sigmoid_gate), then the int8
// quantization for the output projection (hd % 32 == 0 when qa is set), for head h by the
// whole block (128 threads in both callers: the reductions' order depends on the block size).
// The partials are read through L2 only (ld.cg): in the folded merge below they were written
// by other blocks of the same launch.
// With CACHE_W the split weights go through shared memory (MAX_SPLITS floats); without, every
// output recomputes them (the same expf of the same values: the same bits), for the folded
// merge in the grouped attention kernels, which have no shared memory to spare
// (attend_group_128_8 holds 45 KB of staged keys).
template <bool CACHE_W>
__device__ __forceinline__ void merge_head(const float *part, float *out, const float *g,
                                           signed char *qa, float *da, float *sa, int hd,
                                           int n_split, int h) {
    // Split weights exp(m_s - max) computed once, by all threads, into shared memory (the
    // session caps the splits at MAX_SPLITS); every thread walking all splits for the max
    // and the total measured 13 µs per layer at depth 32768 and 66 µs at 131072.
    __shared__ float wgt[CACHE_W ? MAX_SPLITS : 1];
    __shared__ float sh[32];
    // A block may merge several heads in a row: the previous head's readers of wgt first.
    __syncthreads();
    const float *p = part + (size_t)h * n_split * (hd + 2);
    float lm = -3.0e38f;
    for (int s = threadIdx.x; s < n_split; s += blockDim.x)
        lm = fmaxf(lm, __ldcg(p + (size_t)s * (hd + 2)));
    const float gm = block_max(lm, sh);
    float lt = 0.0f;
    for (int s = threadIdx.x; s < n_split; s += blockDim.x) {
        const float w = expf(__ldcg(p + (size_t)s * (hd + 2)) - gm);
        if (CACHE_W) wgt[s] = w;
        lt += __ldcg(p + (size_t)s * (hd + 2) + 1) * w;
    }
    const float total = block_sum(lt, sh);
    const float inv = 1.0f / total;
    const int lane = threadIdx.x & 31;
    for (int base = threadIdx.x & ~31; base < hd; base += blockDim.x) {
        const int i = base + lane;
        float a = 0.0f;
        if (i < hd) {
            float acc = 0.0f;
#pragma unroll 8
            for (int s = 0; s < n_split; s++) {
                const float w = CACHE_W ? wgt[s] : expf(__ldcg(p + (size_t)s * (hd + 2)) - gm);
                acc += __ldcg(p + (size_t)s * (hd + 2) + 2 + i) * w;
            }
            a = acc * inv;
            a *= 1.0f / (1.0f + expf(-g[h * hd + i]));
            out[h * hd + i] = a;
        }
        if (qa) quant_block32(a, (h * hd + base) >> 5, qa, da, sa);
    }
}

extern "C" __global__ void attend_merge_gate_q8(const float *part, float *out, const float *g,
                                                signed char *qa, float *da, float *sa, int hd,
                                                int n_split) {
    merge_head<true>(part, out, g, qa, da, sa, hd, n_split, blockIdx.x);
}

// The split-K merge folded into the attention launch (DecodeTuning::fold_merge): after a
// block has written its partials, the last of the n_split blocks of its column (blockIdx.x)
// to arrive merges heads h0 .. h0 + nh - 1 with merge_head (attend_merge_gate_q8's code and
// block size: the same bits). `cnt[blockIdx.x]` counts arrivals; the last block sets it back
// to 0 for the next launch (every other block of the column has counted by then). One split:
// the block merges its own partials, no counter.
// CACHE_W as merge_head's: the per-head kernels keep the split weights in shared memory
// (without, attend_split_128_m's registers went 108 → 80 and the folded token lost ~4 %:
// 181.5 vs 189.2 tok/s, round m); the grouped ones, whose staged keys leave no room, recompute.
template <bool CACHE_W>
__device__ __forceinline__ void fold_merge(const float *part, float *out, const float *g,
                                           signed char *qa, float *da, float *sa, int hd,
                                           int h0, int nh, unsigned *cnt) {
    __shared__ int last;
    const int n_split = gridDim.y;
    if (n_split > 1) {
        // Every thread's partial writes visible to the GPU before the block counts itself.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            const unsigned prev = atomicAdd(&cnt[blockIdx.x], 1u);
            last = prev == (unsigned)n_split - 1;
            if (last) cnt[blockIdx.x] = 0u;
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
    }
    for (int i = 0; i < nh; i++) merge_head<CACHE_W>(part, out, g, qa, da, sa, hd, n_split, h0 + i);
}

// Stages the K rows of a 32-row chunk (row r = slot of lane r, rows c0 + r < j1 only) in
// this warp's shared rows `ks` (HD / 8 + 1 uint4 each: the padding spreads a lane's row over
// the banks), so that lane r then reads its own row from shared memory. Each global load
// instruction covers whole rows (32 lanes × 16 bytes); one row per lane straight from global
// memory made every load instruction touch 32 lines, and the L1 was the bottleneck (65 % busy,
// 11 µs per sliding layer and 55 µs per full layer at depth 32768, ncu on the H200).
template <int HD>
__device__ __forceinline__ void stage_k_rows(uint4 (*ks)[HD / 8 + 1], const u16 *kc, int slot,
                                             int kv_dim, int kvh, int c0, int j1) {
    const int lane = threadIdx.x & 31;
    __syncwarp();
    // cp.async (sm_80+): global to shared without registers.
#pragma unroll 8
    for (int i = 0; i < HD / 8; i++) {
        const int e = i * 32 + lane, r = e / (HD / 8), c = e % (HD / 8);
        const int sl = __shfl_sync(0xffffffffu, slot, r);
        if (c0 + r < j1) {
            const uint4 *src = (const uint4 *)(kc + (size_t)sl * kv_dim + kvh * HD) + c;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            unsigned long long dst;
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(dst) : "l"((unsigned long long)&ks[r][c]));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)dst), "l"(src)
                         : "memory");
#else
            ks[r][c] = *src;
#endif
        }
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
    __syncwarp();
}

// With `fin` (the folded merge's output, gate and int8 row: see fold_merge) and one split,
// the block finishes its head itself: the merge of one split is acc · (1 / sum) (the split's
// weight exp(m - m) is 1), then the gate and the quantization, in attend_merge_gate_q8's
// operations, so the same bits without the round trip through the partials and the block
// reductions. Returns whether it did.
struct MergeOut {
    float *out;
    const float *g;
    signed char *qa;
    float *da;
    float *sa;
};

// The V values a lane needs of the 32 cache rows whose slots the warp's lanes hold (lane jj:
// row `slot`): its D = HD / 32 halves of each row, two to a u32 (the per-head and grouped
// attention kernels' P · V step).
template <int HD>
__device__ __forceinline__ void load_v_rows(u32 (*vv)[(HD / 32 + 1) / 2], const u16 *vc,
                                            int slot, int kv_dim, int kvh) {
    constexpr int D = HD / 32;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int jj = 0; jj < 32; jj++) {
        const int sl = __shfl_sync(0xffffffffu, slot, jj);
        const u16 *vr = vc + (size_t)sl * kv_dim + kvh * HD + lane * D;
        if (D == 2) {
            vv[jj][0] = *(const u32 *)vr;
        } else if (D == 4) {
            const uint2 t = *(const uint2 *)vr;
            vv[jj][0] = t.x;
            vv[jj][(D + 1) / 2 - 1] = t.y;
        } else {
            const uint4 t = *(const uint4 *)vr;
            vv[jj][0] = t.x;
            vv[jj][1 % ((D + 1) / 2)] = t.y;
            vv[jj][2 % ((D + 1) / 2)] = t.z;
            vv[jj][3 % ((D + 1) / 2)] = t.w;
        }
    }
}

// L1PRE: before anything else, each lane asks L1 for the K and V rows of its first chunk and
// the block for its head's gate values (prefetch.global.L1), so that the V and gate loads,
// which wait behind the K phase, find them there (DecodeTuning::attn_l1_prefetch).
template <int HD, bool L1PRE = false>
__device__ __forceinline__ bool attend_split_hd(const float *q, const u16 *kc, const u16 *vc,
                                                float *part, int n_head, int n_head_kv,
                                                const int *meta, int cap, float scale,
                                                const MergeOut *fin = nullptr) {
    constexpr int D = HD / 32;
    __shared__ __align__(16) float qs[HD];
    __shared__ float wm[4], wsum[4];
    __shared__ float wo[4][HD];
    // K rows straight from global memory here: staging them (stage_k_rows, as the grouped
    // kernel does) measured no faster at 2,048 rows (13.7 vs 13.5 µs) and slower at depth 0.
    constexpr bool KS = false;
    __shared__ uint4 ks[KS ? 4 : 1][KS ? 32 : 1][HD / 8 + 1];
    const int h = blockIdx.x, s = blockIdx.y, n_split = gridDim.y;
    const int first = meta[0], n = meta[1];
    const int kvh = h / (n_head / n_head_kv);
    const int kv_dim = n_head_kv * HD;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (L1PRE) {
        const int per0 = (n + n_split - 1) / n_split;
        const int j = s * per0 + 32 * warp + lane;
        if (j < min(n, s * per0 + per0)) {
            const size_t off = (size_t)((first + j) % cap) * kv_dim + kvh * HD;
#pragma unroll
            for (int b = 0; b < HD * 2; b += 128) {
                asm volatile("prefetch.global.L1 [%0];" ::"l"((const u8 *)(kc + off) + b));
                asm volatile("prefetch.global.L1 [%0];" ::"l"((const u8 *)(vc + off) + b));
            }
        }
        if (fin && (int)threadIdx.x < HD / 32)
            asm volatile("prefetch.global.L1 [%0];" ::"l"(fin->g + h * HD + 32 * threadIdx.x));
    }
    // (Loading q before the window, for the two latencies to overlap, measured 1.5 % slower at
    // depth 0: 200.0 → 197.1 tok/s, this kernel 7.5 → 9.4 µs event-timed; h200-r r6.)
    for (int i = threadIdx.x; i < HD; i += blockDim.x) qs[i] = q[h * HD + i];
    __syncthreads();
    const int per = (n + n_split - 1) / n_split;
    const int j0 = s * per, j1 = min(n, j0 + per);
    float m = -3.0e38f, sum = 0.0f;
    float o[D];
#pragma unroll
    for (int k = 0; k < D; k++) o[k] = 0.0f;
    for (int c0 = j0 + 32 * warp; c0 < j1; c0 += 128) {
        const int j = c0 + lane;
        const bool valid = j < j1;
        const int slot = (first + (valid ? j : c0)) % cap;
        float d = -3.0e38f;
        if (KS) stage_k_rows<HD>(ks[warp], kc, slot, kv_dim, kvh, c0, j1);
        if (valid) {
            const uint4 *kr = (const uint4 *)(kc + (size_t)slot * kv_dim + kvh * HD);
            uint4 kv[HD / 8];
#pragma unroll
            for (int c = 0; c < HD / 8; c++) kv[c] = KS ? ks[KS ? warp : 0][KS ? lane : 0][c] : kr[c];
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < HD / 8; c++) {
                const float4 qa = *(const float4 *)&qs[8 * c];
                const float4 qb = *(const float4 *)&qs[8 * c + 4];
                acc += qa.x * h2f((u16)(kv[c].x & 0xFFFF)) + qa.y * h2f((u16)(kv[c].x >> 16)) +
                       qa.z * h2f((u16)(kv[c].y & 0xFFFF)) + qa.w * h2f((u16)(kv[c].y >> 16)) +
                       qb.x * h2f((u16)(kv[c].z & 0xFFFF)) + qb.y * h2f((u16)(kv[c].z >> 16)) +
                       qb.z * h2f((u16)(kv[c].w & 0xFFFF)) + qb.w * h2f((u16)(kv[c].w >> 16));
            }
            d = acc * scale;
        }
        float cm = d;
        for (int off = 16; off > 0; off >>= 1) cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, off));
        const float nm = fmaxf(m, cm);
        const float corr = expf(m - nm);
        const float p = valid ? expf(d - nm) : 0.0f;
        sum = sum * corr + warp_sum(p);
#pragma unroll
        for (int k = 0; k < D; k++) o[k] *= corr;
        // Rows past the share have p = 0 and read row c0 (always valid memory).
        u32 vv[32][(D + 1) / 2];
        load_v_rows<HD>(vv, vc, slot, kv_dim, kvh);
#pragma unroll
        for (int jj = 0; jj < 32; jj++) {
            const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
            for (int k = 0; k < D; k++) {
                const u32 w2 = vv[jj][k / 2];
                o[k] += pj * h2f((u16)(k % 2 ? w2 >> 16 : w2 & 0xFFFF));
            }
        }
        m = nm;
    }
    if (lane == 0) {
        wm[warp] = m;
        wsum[warp] = sum;
    }
#pragma unroll
    for (int k = 0; k < D; k++) wo[warp][lane * D + k] = o[k];
    __syncthreads();
    float *out = part + ((size_t)h * n_split + s) * (HD + 2);
    float bm = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
    if (fin && n_split == 1) {
        float bs = 0.0f;
        for (int w = 0; w < 4; w++) bs += wsum[w] * expf(wm[w] - bm);
        const float inv = 1.0f / bs;
        for (int base = threadIdx.x & ~31; base < HD; base += blockDim.x) {
            const int i = base + lane;
            float a = 0.0f;
            if (i < HD) {
                float acc = 0.0f;
                for (int w = 0; w < 4; w++) acc += wo[w][i] * expf(wm[w] - bm);
                a = acc * inv;
                a *= 1.0f / (1.0f + expf(-fin->g[h * HD + i]));
                fin->out[h * HD + i] = a;
            }
            if (fin->qa) quant_block32(a, (h * HD + base) >> 5, fin->qa, fin->da, fin->sa);
        }
        return true;
    }
    for (int i = threadIdx.x; i < HD; i += blockDim.x) {
        float acc = 0.0f;
        for (int w = 0; w < 4; w++) acc += wo[w][i] * expf(wm[w] - bm);
        out[2 + i] = acc;
    }
    if (threadIdx.x == 0) {
        float bs = 0.0f;
        for (int w = 0; w < 4; w++) bs += wsum[w] * expf(wm[w] - bm);
        out[0] = bm;
        out[1] = bs;
    }
    return false;
}

// One kernel per head size (64, 128, 256; the session checks), each with its own register
// budget (the hd = 256 body needs twice the registers of the hd = 128 one).
#define ATTEND_SPLIT(HD)                                                                       \
    extern "C" __global__ void attend_split_##HD(const float *q, const u16 *kc, const u16 *vc, \
                                                 float *part, int n_head, int n_head_kv,       \
                                                 const int *meta, int cap, float scale) {      \
        attend_split_hd<HD>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale);             \
    }                                                                                          \
    extern "C" __global__ void attend_split_##HD##_m(                                          \
        const float *q, const u16 *kc, const u16 *vc, float *part, int n_head, int n_head_kv,   \
        const int *meta, int cap, float scale, float *out, const float *g, signed char *qa,    \
        float *da, float *sa, unsigned *cnt) {                                                 \
        const MergeOut fin = {out, g, qa, da, sa};                                             \
        if (!attend_split_hd<HD>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale, &fin))  \
            fold_merge<true>(part, out, g, qa, da, sa, HD, blockIdx.x, 1, cnt);                \
    }
ATTEND_SPLIT(64)
ATTEND_SPLIT(128)
ATTEND_SPLIT(256)

// Keeps the GPU busy for `ns` nanoseconds (globaltimer): the profiling pass queues a step's
// kernels and events behind it, so host launch gaps do not show up as kernel time.
extern "C" __global__ void spin_ns(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// ---- Fused producers: each writes its f32 result and, when `qa` is set, the same values
// quantized to int8 blocks of 32 for the next matvec (quant_block32, bit-identical to the
// separate quantize_q8_32 pass). Warps walk whole 32-element chunks, so n % 32 == 0 there.

// The norm between two matvecs, one block (1024 threads):
//   mode 0: h = rms_norm(x) * wn
//   mode 1: x = rms_norm(x) (the weightless entry norm), then as mode 0
//   mode 2: x += rms_norm(o, eps_post) * wp (a post-norm tail), then as mode 0
// Rows of up to NT_MAX values per thread are held in registers, so each pass issues all its
// loads at once: the loop form (one dependent global load per iteration) measured 11-12 µs
// per call on the H200 for n = 6656. The fast path (n % 8 == 0) gives each thread 8
// consecutive values (two 16-byte loads per array) and quantizes each 32-value block across
// four threads (two shuffle steps instead of five, no serial walk over a warp's blocks).
#define NT_MAX 8
__device__ __forceinline__ void norm_tail_strided(float *x, const float *o, const float *wp, float eps_post,
                                        const float *wn, float eps, float *h, signed char *qa,
                                        float *da, float *sa, int n, int mode, float *sh) {
    const int nt = blockDim.x;
    if (n > NT_MAX * nt) {
        // Rows longer than the register path: the plain loops.
        if (mode == 1) {
            float ss = 0.0f;
            for (int i = threadIdx.x; i < n; i += nt) ss += x[i] * x[i];
            const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
            for (int i = threadIdx.x; i < n; i += nt) x[i] = x[i] * scale * 1.0f;
        } else if (mode == 2) {
            float ss = 0.0f;
            for (int i = threadIdx.x; i < n; i += nt) ss += o[i] * o[i];
            const float scale = rsqrtf(block_sum(ss, sh) / n + eps_post);
            for (int i = threadIdx.x; i < n; i += nt) x[i] += o[i] * scale * wp[i];
        }
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += nt) ss += x[i] * x[i];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
        for (int i = threadIdx.x; i < n; i += nt) h[i] = x[i] * scale * wn[i];
        if (qa)
            for (int base = threadIdx.x & ~31; base < n; base += nt)
                quant_block32(h[base + (threadIdx.x & 31)], base >> 5, qa, da, sa);
        return;
    }
    float xv[NT_MAX], wv[NT_MAX];
#pragma unroll
    for (int k = 0; k < NT_MAX; k++) {
        const int i = threadIdx.x + k * nt;
        xv[k] = i < n ? x[i] : 0.0f;
        wv[k] = i < n ? wn[i] : 0.0f;
    }
    if (mode == 1) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < NT_MAX; k++)
            if (threadIdx.x + k * nt < n) ss += xv[k] * xv[k];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
#pragma unroll
        for (int k = 0; k < NT_MAX; k++) {
            const int i = threadIdx.x + k * nt;
            if (i < n) {
                xv[k] = xv[k] * scale * 1.0f;
                x[i] = xv[k];
            }
        }
    } else if (mode == 2) {
        float ov[NT_MAX], pv[NT_MAX];
#pragma unroll
        for (int k = 0; k < NT_MAX; k++) {
            const int i = threadIdx.x + k * nt;
            ov[k] = i < n ? o[i] : 0.0f;
            pv[k] = i < n ? wp[i] : 0.0f;
        }
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < NT_MAX; k++)
            if (threadIdx.x + k * nt < n) ss += ov[k] * ov[k];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps_post);
#pragma unroll
        for (int k = 0; k < NT_MAX; k++) {
            const int i = threadIdx.x + k * nt;
            if (i < n) {
                xv[k] += ov[k] * scale * pv[k];
                x[i] = xv[k];
            }
        }
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < NT_MAX; k++)
        if (threadIdx.x + k * nt < n) ss += xv[k] * xv[k];
    const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
#pragma unroll
    for (int k = 0; k < NT_MAX; k++) {
        const int i = threadIdx.x + k * nt, base = i & ~31;
        if (base < n) {
            // With qa set, n % 32 == 0: whole warps are in or out.
            const float v = xv[k] * scale * wv[k];
            if (i < n) h[i] = v;
            if (qa) quant_block32(v, base >> 5, qa, da, sa);
        }
    }
}

// The int8 quantization of a thread's 8 consecutive values hv (element i0 on) in blocks of 32
// over 4 threads (as quant_block32; all of a warp's threads shuffle, `on` says whether this one
// holds values).
__device__ __forceinline__ void store_q8(const float *hv, signed char *qa, float *da, float *sa,
                                         int i0, bool on) {
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) amax = fmaxf(amax, fabsf(hv[k]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    u32 packed[2] = {0u, 0u};
    float qs = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const int q = __float2int_rn(hv[k] * id);
        qs += (float)q;
        packed[k / 4] |= ((u32)(q & 0xFF)) << (8 * (k % 4));
    }
    qs += __shfl_xor_sync(0xffffffffu, qs, 1);
    qs += __shfl_xor_sync(0xffffffffu, qs, 2);
    if (on) {
        *(uint2 *)(qa + i0) = make_uint2(packed[0], packed[1]);
        if ((threadIdx.x & 3) == 0) {
            da[i0 >> 5] = d;
            sa[i0 >> 5] = d * qs;
        }
    }
}

// Writes a thread's 8 consecutive values hv to h[i0 ..] and, when qa is set, their int8
// quantization (store_q8). The norm tails' common end.
__device__ __forceinline__ void store_h_q8(const float *hv, float *h, signed char *qa,
                                           float *da, float *sa, int i0, bool on) {
    if (on) {
        *(float4 *)(h + i0) = make_float4(hv[0], hv[1], hv[2], hv[3]);
        *(float4 *)(h + i0 + 4) = make_float4(hv[4], hv[5], hv[6], hv[7]);
    }
    if (qa) store_q8(hv, qa, da, sa, i0, on);
}

// 8 consecutive values per thread; quant blocks of 32 span 4 threads (n % 32 == 0 when qa).
__device__ __forceinline__ void norm_tail_vec8(float *x, const float *o, const float *wp,
                                               float eps_post, const float *wn, float eps,
                                               float *h, signed char *qa, float *da, float *sa,
                                               int n, int mode, float *sh) {
    const int t = threadIdx.x, i0 = 8 * t;
    const bool on = i0 < n;
    float xv[8], wv[8];
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    {
        const float4 a = on ? *(const float4 *)(x + i0) : z, b = on ? *(const float4 *)(x + i0 + 4) : z;
        const float4 c = on ? *(const float4 *)(wn + i0) : z, d = on ? *(const float4 *)(wn + i0 + 4) : z;
        xv[0] = a.x; xv[1] = a.y; xv[2] = a.z; xv[3] = a.w; xv[4] = b.x; xv[5] = b.y; xv[6] = b.z; xv[7] = b.w;
        wv[0] = c.x; wv[1] = c.y; wv[2] = c.z; wv[3] = c.w; wv[4] = d.x; wv[5] = d.y; wv[6] = d.z; wv[7] = d.w;
    }
    if (mode == 1) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] = xv[k] * scale * 1.0f;
    } else if (mode == 2) {
        float ov[8], pv[8];
        const float4 a = on ? *(const float4 *)(o + i0) : z, b = on ? *(const float4 *)(o + i0 + 4) : z;
        const float4 c = on ? *(const float4 *)(wp + i0) : z, d = on ? *(const float4 *)(wp + i0 + 4) : z;
        ov[0] = a.x; ov[1] = a.y; ov[2] = a.z; ov[3] = a.w; ov[4] = b.x; ov[5] = b.y; ov[6] = b.z; ov[7] = b.w;
        pv[0] = c.x; pv[1] = c.y; pv[2] = c.z; pv[3] = c.w; pv[4] = d.x; pv[5] = d.y; pv[6] = d.z; pv[7] = d.w;
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += ov[k] * ov[k];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps_post);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] += ov[k] * scale * pv[k];
    }
    if (mode != 0 && on) {
        *(float4 *)(x + i0) = make_float4(xv[0], xv[1], xv[2], xv[3]);
        *(float4 *)(x + i0 + 4) = make_float4(xv[4], xv[5], xv[6], xv[7]);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
    const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
    float hv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) hv[k] = xv[k] * scale * wv[k];
    store_h_q8(hv, h, qa, da, sa, i0, on);
}

extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8(float *x, const float *o, const float *wp, float eps_post,
                                        const float *wn, float eps, float *h, signed char *qa,
                                        float *da, float *sa, int n, int mode) {
    __shared__ float sh[32];
    if (n % 8 == 0 && n <= 8 * (int)blockDim.x)
        norm_tail_vec8(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode, sh);
    else
        norm_tail_strided(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode, sh);
}

// qk_norm_rope, plus the KV store: blocks n_head .. n_head + n_head_kv also write their
// normed, rotated K head into cache slot *slot_p (f16), and the next n_head_kv blocks copy
// the V heads there. The rotation's (cos, sin) per pair come from the host with the step's
// parameters (`cs`, f32, as (float)cos(θ), (float)sin(θ) of θ = pos · base^(-2i/hd) in f64):
// computing pow, cos and sin in f64 here took the kernel 5 µs (ncu on the H200).
extern "C" __global__ void qk_norm_rope_store(float *q, float *k, const float *v,
                                              const float *qw, const float *kw, int n_head,
                                              int n_head_kv, int hd, float eps, const float *cs,
                                              int rope, u16 *kc, u16 *vc, const int *slot_p) {
    const int h = blockIdx.x;
    const size_t row = (size_t)(*slot_p) * n_head_kv * hd;
    if (h >= n_head + n_head_kv) {
        const int kvh = h - n_head - n_head_kv;
        for (int i = threadIdx.x; i < hd; i += blockDim.x)
            vc[row + kvh * hd + i] = f2h(v[kvh * hd + i]);
        return;
    }
    float *vv = h < n_head ? q + h * hd : k + (h - n_head) * hd;
    const float *w = h < n_head ? qw : kw;
    // Every warp takes the head's sum of squares (the same bits), before any write.
    const float scale = rsqrtf(head_sumsq(hd, [&](int i) { return vv[i]; }) / hd + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) {
        const float2 r = qk_pair(vv[2 * i], vv[2 * i + 1], scale, w[2 * i], w[2 * i + 1], rope,
                                 cs[2 * i], cs[2 * i + 1]);
        vv[2 * i] = r.x;
        vv[2 * i + 1] = r.y;
        if (h >= n_head) {
            const size_t at = row + (size_t)(h - n_head) * hd + 2 * i;
            kc[at] = f2h(r.x);
            kc[at + 1] = f2h(r.y);
        }
    }
}

// g = silu(g) * u (as swiglu), then the int8 quantization for the down projection
// (n % 32 == 0 when qa is set). 5.4 µs per call (event-timed, n = 19968); where the FFN
// gate and up are Q4_K the session folds this into their launch instead (mvq_gu_swiglu in
// mvq1.cu, the same bits; bench/runs/2026-11-30-h200-g).
extern "C" __global__ void swiglu_q8(float *g, const float *u, signed char *qa, float *da,
                                     float *sa, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((i & ~31) >= n) return;
    float r = 0.0f;
    if (i < n) {
        r = silu_mul(g[i], u[i]);
        g[i] = r;
    }
    if (qa) quant_block32(r, i >> 5, qa, da, sa);
}
