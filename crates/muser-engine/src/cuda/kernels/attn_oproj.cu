// The per-head attention of a short cache and the output projection as one launch
// (DecodeTuning::attn_oproj; its own module, after common.cuh, decode.cu and mvq1.cu): blocks
// 0 .. n_head - 1 attend as attend_split_HD_mpl's blocks with one split (the merge, the sigmoid
// gate and the int8 row folded in: the `fin` path), and the other blocks each take 16 rows of
// the Q4_K projection (4 warps of q4k_rows<4>: mvq_one_q4k_lb5's rows, so the same bits). A
// projection block first prefetches the first `pf` bytes of its rows into L2, then waits for
// the heads: each attention block, its int8 row written and fenced, counts itself on sync[0];
// the one that completes the count raises AO_FLAGS flags (sync[32 (k + 1)], a cache line each,
// so that the waiting blocks spread their polls over several lines); projection block b polls
// flag b mod AO_FLAGS (relaxed loads, then a fence) while the rest of the block waits at a barrier, computes
// its rows, and counts itself on sync[1]; the last one sets every word back to 0 for the next
// launch. The host launches it only where the whole grid is resident at once (the attention
// blocks, with the lowest indices, are never waiting for a slot).
#define AO_FLAGS 16

// The polls are relaxed loads (an acquire load per poll, g3's first version, cost the token
// ~5 %: each may invalidate the SM's L1 beside the attention blocks' prefetched rows); one
// fence after the flag is seen orders the block's reads of the int8 row.
__device__ __forceinline__ unsigned ld_relaxed_u32(const unsigned *p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_u32(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <int HD>
__device__ __forceinline__ void attn_oproj(const float *q, const u16 *kc, const u16 *vc,
                                           float *part, int n_head, int n_head_kv,
                                           const int *meta, int cap, float scale, float *out,
                                           const float *g, signed char *qa, float *da,
                                           float *sa, unsigned *sync, const u8 *w, int n_out,
                                           float *y, int n_in, int pf) {
    if ((int)blockIdx.x < n_head) {
        const MergeOut fin = {out, g, qa, da, sa};
        attend_split_hd<HD, true>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale, &fin);
        // Every thread's writes of the int8 row visible to the GPU before the block counts.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0 && atomicAdd(&sync[0], 1u) == (unsigned)n_head - 1) {
            __threadfence();
            for (int k = 0; k < AO_FLAGS; k++) st_release_u32(&sync[32 * (k + 1)], 1u);
        }
        return;
    }
    const int b = blockIdx.x - n_head, warps = blockDim.x >> 5;
    const int rows = 4 * warps, row0 = (b * warps + (threadIdx.x >> 5)) * 4;
    {
        // The block's rows are contiguous: rows · row bytes from row b · rows.
        const size_t rb = (size_t)(n_in / 256) * 144;
        const int mine = min(rows, n_out - b * rows);
        const u8 *base = w + (size_t)b * rows * rb;
        const int lines = (int)((min((size_t)pf, (size_t)mine * rb) + 127) >> 7);
        for (int i = threadIdx.x; i < lines; i += blockDim.x)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(base + (size_t)i * 128));
    }
    if (threadIdx.x == 0) {
        const unsigned *f = &sync[32 * (1 + b % AO_FLAGS)];
        while (ld_relaxed_u32(f) == 0) __nanosleep(32);
        __threadfence();
    }
    __syncthreads();
    if (row0 < n_out) q4k_rows<4>(w, qa, da, sa, y + row0, n_in, n_out, row0, 0, 1.0f, 0.0f);
    if (threadIdx.x == 0 && atomicAdd(&sync[1], 1u) == gridDim.x - n_head - 1) {
        // Every block has passed its wait and every head has counted: reset for the next launch.
        sync[0] = 0u;
        sync[1] = 0u;
        for (int k = 0; k < AO_FLAGS; k++) sync[32 * (k + 1)] = 0u;
    }
}

#define ATTN_OPROJ(HD)                                                                         \
    extern "C" __global__ void __launch_bounds__(128, 4) attn_oproj_##HD(                      \
        const float *q, const u16 *kc, const u16 *vc, float *part, int n_head, int n_head_kv,   \
        const int *meta, int cap, float scale, float *out, const float *g, signed char *qa,    \
        float *da, float *sa, unsigned *sync, const u8 *w, int n_out, float *y, int n_in,      \
        int pf) {                                                                              \
        attn_oproj<HD>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale, out, g, qa, da,   \
                       sa, sync, w, n_out, y, n_in, pf);                                       \
    }
ATTN_OPROJ(64)
ATTN_OPROJ(128)
ATTN_OPROJ(256)
