// L2 prefetch beside the decode step's latency-bound kernels (DecodeTuning::l2_prefetch;
// appended to decode.cu after norm_cluster.cu at compile time): variants of the norm tail and
// of the per-head folded attention whose extra blocks only prefetch the next matvec's weights
// into L2 and leave, so that DRAM streams them while the real blocks wait on their own
// latency. A prefetch is a hint: no value changes anywhere.
// Measured (bench/runs/2026-11-30-h200-m, interleaved A/B): 16 extra blocks, 30 % of the
// Q/K/V/gate matrices, 60 % of the output projection, 6 % of FFN gate/up: 188.9 → 191.4
// tok/s at depth 0, 173.9 → 175.2 at 32768. Issuing the prefetches costs the issuing blocks
// time, and the launch ends with its last block: 8 extra blocks (more lines each) made the
// token 7 % slower, 24-128 gained less or lost; the kernels' own blocks prefetching first
// (no extra block) lost 4-10 %; so did larger fractions. A separate prefetch kernel forked
// beside these kernels on a side stream of the graph measured 2-13 % slower. The extra blocks
// issuing one cp.async.bulk.prefetch.L2 per 16 KB instead measured 27 % slower at every
// block count and fraction (193.3 → 140-141.6 tok/s, bench/runs/2026-11-30-h200-n n3). With
// the weight loads evict-first in L2 (mvq1.cu) the sweep was repeated: larger fractions still
// lose (16 blocks, 60/100/12 %: 197.5 → 190.4 tok/s), and the prefetched lines marked
// evict-last (prefetch.global.L2::evict_last) lose a little (bench/runs/2026-11-30-h200-p p5,
// p9).
// PF_ARGS and prefetch_ranges live in common.cuh (the matvecs' tail prefetch uses them too).

#define NORM_TAIL_PF(NAME, ONE)                                                                 \
    extern "C" __global__ void __launch_bounds__(1024) NAME(                                   \
        float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,  \
        float *h, signed char *qa, float *da, float *sa, int n, int mode, PF_ARGS) {           \
        if (blockIdx.x >= NC_BLOCKS) {                                                         \
            prefetch_ranges(PF_PASS, blockIdx.x - NC_BLOCKS,                                   \
                            gridDim.x - NC_BLOCKS);                                            \
            return;                                                                            \
        }                                                                                      \
        norm_tail_cl<ONE>(x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode);                \
    }
NORM_TAIL_PF(norm_tail_q8_cl_pf, false)
NORM_TAIL_PF(norm_tail_q8_cl1_pf, true)

// The per-head attention with the merge folded in (attend_split_HD_m), blocks with
// blockIdx.x >= n_head prefetching (those of the first split row only).
#define ATTEND_SPLIT_PF(HD, SUF, L1)                                                           \
    extern "C" __global__ void attend_split_##HD##_mp##SUF(                                    \
        const float *q, const u16 *kc, const u16 *vc, float *part, int n_head, int n_head_kv,   \
        const int *meta, int cap, float scale, float *out, const float *g, signed char *qa,    \
        float *da, float *sa, unsigned *cnt, PF_ARGS) {                                        \
        if ((int)blockIdx.x >= n_head) {                                                       \
            if (blockIdx.y == 0)                                                               \
                prefetch_ranges(PF_PASS, blockIdx.x - n_head,                                  \
                                gridDim.x - n_head);                                           \
            return;                                                                            \
        }                                                                                      \
        const MergeOut fin = {out, g, qa, da, sa};                                             \
        if (!attend_split_hd<HD, L1>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale,     \
                                     &fin))                                                    \
            fold_merge<true>(part, out, g, qa, da, sa, HD, blockIdx.x, 1, cnt);                \
    }
ATTEND_SPLIT_PF(64, , false)
ATTEND_SPLIT_PF(128, , false)
ATTEND_SPLIT_PF(256, , false)
// The same with the lanes' K/V rows and the gate asked of L1 first (attend_split_hd's L1PRE).
ATTEND_SPLIT_PF(64, l, true)
ATTEND_SPLIT_PF(128, l, true)
ATTEND_SPLIT_PF(256, l, true)
