//! Kernel launches through `cuLaunchKernelEx`, optionally in thread-block clusters (sm_90:
//! the blocks of a cluster run together and read each other's shared memory), and the
//! decode step's launch choices (`DecodeTuning`).

use std::ffi::c_void;

use cudarc::driver::{sys, CudaFunction, CudaStream, LaunchConfig};

use super::{SegKernel, SEG_KERNELS};
use crate::error::{Error, Result};

/// A kernel argument (device addresses as `u64`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum KArg {
    P(u64),
    I(i32),
    F(f32),
}

/// How the decode step launches its kernels. Chosen once per session (a captured graph keeps
/// it); settable for A/B measurements through `Cuda::set_decode_tuning`. What was tried and
/// did not help (programmatic dependent launch, L2 prefetches, a SwiGLU epilogue with arrival
/// counters, other row splits for the attention projections, a spread merge; other block
/// shapes of the SwiGLU fold; the sub-wave matvecs' rows staged through shared memory; the
/// tensor-core attention with 8 warps per block; an L2 prefetch kernel on a forked graph
/// stream; the output projection streamed through a cp.async.bulk shared-memory ring; an L1
/// prefetch in the Q/K/V epilogue; the L2 prefetch issued as cp.async.bulk.prefetch.L2 per
/// 16 KB; a deferred-norm step whose consumers take two int8 rows; the Q/K/V/gate launch with
/// its types fixed at compile time; the FFN down projection's rows split over more blocks,
/// the norm tail adding the partial rows; the tensor-core attention's merge folded in through
/// thread-block clusters; the wide merge prefetching the output projection; the gate
/// projection's rows in the tensor-core attention launch; the wide merge as one warp per block;
/// the output projection prefetched beside the tensor-core attention; every layer as one
/// persistent kernel streaming the weights through a shared-memory ring, branch
/// `cuda-persist`, with or without its producer prefetching into L2 ahead of the ring;
/// programmatic dependent launch with the matvecs triggering after their weight loads, branch
/// `cuda-pdl-end`; the cluster barriers that keep shared memory alive split into arrive and
/// wait, branch `cuda-split-cluster-barrier`; the tensor-core attention's warps writing their
/// partials as splits of their own, branch `cuda-mma-warp-splits`; the attention of short
/// caches folded into the Q/K/V/gate launch, its Q clusters waiting on counters of the K, V
/// and gate blocks, branch `cuda-fold-attn`; the embedding gather folded into the entry norm,
/// branch `cuda-fed-embed`; the short caches' KV rows prefetched into L2 as evict-last; the
/// per-head attention's K rows loaded whole by lane groups, branch `cuda-attn-kc`; the post-norm
/// tails' row sums written by the projections before them, the tails without a cluster
/// exchange; the prefetching blocks started late, or first in their grids; the post-norm tails
/// as programmatic launches after triggering projections: round e's patches; the
/// post-attention norm tail folded into the gate/up launch as clusters of 8, round f's patch;
/// the norm weights loaded evict-last with an L2 set-aside for persisting lines, the LM head's
/// last wave prefetching the next token's first Q/K/V/gate matrices, the one-split attention
/// and the output projection as one launch whose projection blocks wait on flags: round g's
/// patches; the attention's window as kernel arguments rewritten in the captured graphs before
/// each replay, with one or two instantiations, and its rows prefetched into L1 before the
/// window is read: round h's; the Q/K/V/gate launch's partial last loop trip prefetched into
/// L2 by the norm tail before it: round i's; the per-head attention's q loaded before its
/// window, one line of every 2 MB page or 64 KB of each next matrix prefetched beside the L2
/// prefetches (address translations warmed), the flat LM head at 5 blocks a SM: round j's) is
/// recorded in bench/runs/2026-11-30-h200-e, -g, -h, -j, -m, -n, -o, -p, 2026-12-01-h200-r,
/// -s, -t, -u, -v, 2026-12-02-h200-c, -d, -e, -f, -g, -h and 2026-12-03-h200-i, -j and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeTuning {
    /// The segment kernel of launches whose matrices are all Q6_K (the FFN down projection of
    /// the "more bits" layers, the LM head; `None`: the session's).
    pub q6k_kernel: Option<SegKernel>,
    /// The norm tails as a cluster of 8 blocks (`norm_tail_q8_cl`, sm_90; rows of a multiple
    /// of 256 values) instead of one block. Changes the order of the row sums.
    pub cluster_norm: bool,
    /// With `cluster_norm`, the post-norm tails (mode 2) take both row sums from one cluster
    /// exchange (`norm_tail_q8_cl1`: Σo², Σx², Σx·op, Σop² together, Σx'² from them) instead
    /// of two: one block reduction and one cluster barrier fewer. Changes the rounding of the
    /// second sum.
    pub norm_one_sum: bool,
    /// QK-norm, RoPE and the KV store folded into the Q/K/V/gate launch as a cluster epilogue
    /// (`mvq_seg_42_lb5_qkv`, sm_90; with the session's kernel `mvq_seg_42_lb5`, Q4_K Q and
    /// K, head_dim a multiple of 16 from 32 to 128) instead of `qk_norm_rope_store`. Same bits.
    pub fold_qk: bool,
    /// SwiGLU and its int8 quantization folded into the FFN gate/up launch (`mvq_gu_swiglu`:
    /// 32 rows of both matrices per block, no synchronisation between blocks; Q4_K gate and
    /// up, n_ff a multiple of 32) instead of the segment kernel and `swiglu_q8`. Same bits.
    pub fold_swiglu: bool,
    /// With `fold_swiglu`, each warp's four 4-row units of the gate/up launch as one stream
    /// of super-block columns (`mvq_gu_swiglu_flat`: at n_in 6656, 13 loop trips per warp
    /// instead of 16, every lane loading in each), where a row has an even number of
    /// super-blocks. Same bits. Measured alone on the H200 (tools/bench/mvbw, h200-n):
    /// 40.3 → 39.1 µs per launch.
    pub gate_up_flat: bool,
    /// Cache rows per split-K attention block (at least 64: the partials are sized for that),
    /// for the per-head kernel and for the grouped one (long caches:
    /// with K staged through shared memory, two 32-row chunks per warp at 256 rows measured
    /// 148.3 → 152.2 tok/s at depth 32768 with every layer at 256).
    pub split_rows: usize,
    pub split_rows_grouped: usize,
    // ---- Tensor-core attention (branch cuda-att, bench/runs/2026-11-30-h200-i).
    /// Split-K attention on the tensor cores (`attend_mma_*`, kernels/attend_mma.cu: up to 16
    /// query heads of a KV group as the M rows of mma.sync products, K and V through a
    /// cp.async ring) on the layers it covers, instead of `AttnChoice`'s kernels (`None`:
    /// off). Changes the summation order: held to the oracle's bar, not bit-identity.
    /// Default 16 × 2, caches of at least 2,048 rows, 512 rows per split on long caches
    /// (h200-i r2, interleaved A/B: depth 4096 171.2 → 176.6 tok/s, 32768 159.3 → 171.3,
    /// 131072 122.6 → 154.2; at depth 0 no cache is that long: unchanged).
    pub attn_mma: Option<MmaAttn>,
    // ---- Wide merge and 8-warp tensor-core blocks (branch cuda-att2, h200-j).
    /// The split-K merge as `attend_merge_gate_q8_w` (kernels/attend_merge.cu: grid n_head ×
    /// head_dim / 32, each block's splits spread over its threads and combined by a tree) on
    /// the layers it covers, instead of `attend_merge_gate_q8` (one block per head, each
    /// thread walking every split of one dim; `None`: off). Changes the summation order: held
    /// to the oracle's bar. Default 256 threads on layers of at least 8 splits (h200-j r1,
    /// interleaved A/B, every layer: depth 32768 172.2-172.3 → 173.5-174.1 tok/s, 131072
    /// 155.2 → 160.7, 4096 unchanged within noise; merge 12.6 → 7.9 µs per layer at 131072,
    /// event-timed). At depth 0 (1-2 splits) the A/B saw no change and a bench 184.2 → 183.6,
    /// hence `min_splits`: those layers keep the serial merge. With `WideMerge::warp_columns`
    /// (default since round v) the wide layers run `attend_merge_gate_q8_wv` instead (a warp
    /// per 4 columns, the splits across its lanes, 256 threads).
    pub wide_merge: Option<WideMerge>,
    /// The split-K merge folded into the per-head and grouped attention launches (their
    /// `_m` variants: the last block of each column to finish merges its heads with
    /// `attend_merge_gate_q8`'s code, so the same bits) on layers of at most this many
    /// splits; the tensor-core attention and longer caches keep the separate merge (`None`:
    /// never). One launch fewer per layer where it applies.
    pub fold_merge: Option<usize>,
    /// The batched prefill's attention on the tensor cores (`pf_attend_mma_*`,
    /// kernels/prefill_mma.cu: 4 tokens a block sharing staged key chunks, up to 16 heads of a
    /// KV group as the M rows; sm_80+, groups of at most 16 heads or a multiple of 16) instead
    /// of `pf_attend_g_*` (CUDA cores, one block per token). Changes the summation order: held
    /// to the oracle's bar.
    pub prefill_mma: bool,
    /// The attention's kernel choice and split counts from the rows in use, rounded up to a
    /// power of two (at least 128), instead of from the caches' capacity: one captured graph
    /// per such span, so that a session of many positions holding few rows decodes like a
    /// short one (one split, the merge folded in) instead of walking empty splits.
    pub span_graphs: bool,
    /// Part of the next matvec's weights prefetched into L2 by extra blocks of the
    /// latency-bound launch before it (`None`: off). No value changes.
    pub l2_prefetch: Option<L2Prefetch>,
    /// With `l2_prefetch`, the per-head folded attention's lanes ask L1 for their K/V rows
    /// and the head's gate values first (`attend_split_*_mpl`). No value changes. Measured
    /// (h200-m m7, m8, interleaved A/B at depth 0): 188.9-189.6 → 190.2-191.0 tok/s, and
    /// 190.5-190.8 → 192.0-192.8. The same for the Q/K/V launch's epilogue (its norm weights
    /// and RoPE values) measured 0.5-1 tok/s slower and was removed.
    pub attn_l1_prefetch: bool,
    /// Launches of one matrix (the output projection, the FFN down projection) through the
    /// one-matrix kernels (`mvq_one_q4k_lb5`, `mvq_one_q6ks_lb4`: the segment kernels' loops
    /// without the segment dispatch) instead of the segment kernel. Same bits. Measured on the
    /// H200 (bench/runs/2026-11-30-h200-o, interleaved A/B): 195.2 → 196.5 tok/s at depth 0,
    /// 177.4 → 178.7 at 32,768.
    pub one_matrix: bool,
    /// Warps per block of the one-matrix launches (1 to 4; each warp its 4 rows, so the same
    /// bits at any count): fewer warps per block spread the sub-wave grids' rows more evenly
    /// over the SMs (416 blocks of 4 warps put 4 blocks on 20 of the H200's 132 SMs and 3 on
    /// the others; 1,664 blocks of one warp put 12 or 13 on each). Measured on the H200
    /// (bench/runs/2026-12-01-h200-s s4, interleaved A/B, the same bits): 4 → 1 warp 197.4-198.3
    /// → 198.7-198.9 tok/s at depth 0, 185.7-186.3 → 186.3-186.7 at 32,768 (2 warps between;
    /// s5: within the noise at 4,096).
    pub one_warps: u32,
    /// Part of the next matvec's weights prefetched into L2 by the blocks of each matvec
    /// launch once their own rows are written (`None`: off). No value changes.
    pub tail_prefetch: Option<TailPrefetch>,
    /// The LM head (split Q6_K with an even number of super-blocks per row, at least 4)
    /// through `mvq_flat_q6ks_lb4`: each warp's four 4-row units as one stream of
    /// super-block columns, with the logit scale and softcap. Same bits. Measured on the H200
    /// (bench/runs/2026-12-01-h200-y y7, the launch alone): 281-288 → 260-261 µs.
    pub lm_flat: bool,
    /// The FFN gate and up matrices, where the flat gate/up launch takes them, laid out as
    /// its warps read them (`kernels/common.cuh`'s gate/up streams: each loop trip's load
    /// instructions 512 contiguous bytes) and read by `mvq_gu_swiglu_flat_gs`. Same bits.
    /// Measured on the H200 (bench/runs/2026-12-01-h200-z z9): the launch alone 37.9-38.0 →
    /// 37.4-37.5 µs (tools/bench/mvbw/ilv.cu); interleaved A/B 207.1-207.7 → 209.3-209.5 tok/s
    /// at depth 0, 194.5-194.8 → 195.7-196.3 at 32,768.
    pub gate_up_streams: bool,
    /// `CudaSession::greedy_fed`'s argmax folded into the LM head where it runs the flat
    /// kernel (`lm_flat`): each warp merges its rows' best into a 64-bit key of the step with
    /// one atomic max, and the next step's embedding gather decodes it, instead of
    /// `argmax_f32_grid`'s launch between the steps. The same tokens. Measured on the H200
    /// (bench/runs/2026-12-03-h200-j j1, `cuda_test fedab`, interleaved, 4 rounds of 128
    /// tokens): 211.56-211.92 → 211.75-212.05 tok/s at depth 0, 198.79-199.07 → 199.01-199.04
    /// at 32,768 (+0.06-0.08 %: the argmax launch was ~3 µs of a 4.72 ms token).
    pub fold_argmax: bool,
}

/// What `DecodeTuning::tail_prefetch` fetches: per matvec launch, a span `(from, to)` in
/// percent of the next matvec's weights (`from >= to`: nothing), issued by the launch's blocks
/// as they finish (the `_tp` kernels of `kernels/mvq1.cu`), so that DRAM streams those bytes
/// while the launch's last warps finish instead of idling at the launch boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailPrefetch {
    /// Of the output projection, by the Q/K/V/gate launch.
    pub o_proj: (u8, u8),
    /// Of the FFN gate and up matrices, by the output projection's launch.
    pub gate_up: (u8, u8),
    /// Of the FFN down projection, by the gate/up launch.
    pub down: (u8, u8),
    /// Of the next layer's Q/K/V/gate matrices, by the down projection's launch.
    pub qkvg: (u8, u8),
    /// Of the LM head, by the last layer's down projection.
    pub lm_head: (u8, u8),
    /// Of the KV cache rows a sliding layer's attention reads (its ring's, up to the step's
    /// span; K and V each), by the layer's Q/K/V/gate launch.
    pub kv_sliding: (u8, u8),
    /// The same for the full-attention layers' planes.
    pub kv_full: (u8, u8),
}

impl Default for TailPrefetch {
    /// The first 10 % of the FFN down projection by the gate/up launch, nothing elsewhere: the
    /// one boundary without a latency-bound launch (and its L2 prefetch) before the next
    /// matvec. Measured on the H200 (bench/runs/2026-12-01-h200-x x1, x2, interleaved A/B, the
    /// same bits): 204.1-204.4 → 205.0-205.2 tok/s at depth 0 and 192.1-192.3 → 192.7-193.1 at
    /// 32,768 (x1), 201.7-202.7 → 202.5-203.3 and 190.1-190.6 → 190.8-191.7 (x2, a slower
    /// machine); 5, 7 and 14 % about the same. The other launches' spans lose, alone or
    /// beside it (Q/K/V/gate 20-40 % by the down projection 1.5 %, output projection 0-30 %
    /// by the Q/K/V/gate launch 0.9 %, gate/up 6-12 % by the output projection 1.9 %, the LM
    /// head's first 2 % by the last down projection no change): there the latency-bound
    /// launch's own L2 prefetch already fills the boundary. Moving those prefetches into the
    /// matvec tails loses 0.5-2.5 % (x4), and so does the attention's KV rows by the Q/K/V/gate
    /// launch (sliding rings 0.3-0.6 %, x6).
    fn default() -> Self {
        TailPrefetch {
            o_proj: (0, 0),
            gate_up: (0, 0),
            down: (0, 10),
            qkvg: (0, 0),
            lm_head: (0, 0),
            kv_sliding: (0, 0),
            kv_full: (0, 0),
        }
    }
}

impl Default for L2Prefetch {
    /// The best of the sweeps on the H200 (bench/runs/2026-11-30-h200-m, m3-m5): 188.9 →
    /// 191.4 tok/s at depth 0, 173.9 → 175.2 at 32,768 (interleaved A/B). Round w swept
    /// each amount again (bench/runs/2026-12-01-h200-w w8, w9, w11): 20 % of the Q/K/V/gate
    /// matrices instead of 30 % (w8: 203.4-203.5 → 203.9-204.0 tok/s at depth 0, 191.1-191.7
    /// → 192.0-192.1 at 32,768; w9: 202.0-203.5 → 202.6-203.9 and 190.7-191.6 → 191.3-192.0;
    /// 15 % about the same, 0 % and 40 % slower); other block counts and the other amounts
    /// at 2/3 or 4/3 no faster.
    fn default() -> Self {
        L2Prefetch {
            blocks: 16,
            qkvg: 20,
            o_proj: 60,
            gate_up: 6,
        }
    }
}

/// What `DecodeTuning::l2_prefetch` fetches, and with how many extra blocks: the first
/// `percent` % of each matrix of the matvec after each window (0: nothing there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Prefetch {
    /// Extra blocks per launch (the norm tails round them up to whole clusters of 8; 0: no
    /// prefetch).
    pub blocks: u32,
    /// Of the Q/K/V/gate matrices, beside the norm tail before them.
    pub qkvg: u8,
    /// Of the output projection, beside the attention (the per-head kernel with the merge
    /// folded in: short caches).
    pub o_proj: u8,
    /// Of the FFN gate and up matrices, beside the post-attention norm tail.
    pub gate_up: u8,
}

/// The default `DecodeTuning::fold_merge`: below `WideMerge`'s default `min_splits`, so a
/// folded layer gives the bits the serial merge it replaces would.
pub const FOLD_MERGE_MAX_SPLITS: usize = 7;

/// Where and how the wide split-K merge runs (`DecodeTuning::wide_merge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WideMerge {
    /// Threads per block of `attend_merge_gate_q8_w`: a power of two from 32 to 1,024 (else,
    /// or when head_dim is not a multiple of 32, the serial merge runs); ignored with
    /// `warp_columns` (256). 256 and 512 measured alike (h200-j r1).
    pub threads: usize,
    /// Layers with at least this many splits (the others keep the serial merge).
    pub min_splits: usize,
    /// The splits across the lanes of each warp, a warp per 4 columns of a 32-column block
    /// (`attend_merge_gate_q8_wv`, 256 threads whatever `threads` says): one barrier per block
    /// instead of ~8. Another summation order (held to the oracle's bar).
    pub warp_columns: bool,
}

impl Default for WideMerge {
    fn default() -> Self {
        WideMerge {
            threads: 256,
            min_splits: 8,
            warp_columns: true,
        }
    }
}

/// Where and how the tensor-core attention runs (`DecodeTuning::attn_mma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmaAttn {
    /// Cache rows per warp chunk and cp.async stages per warp ring: a compiled variant
    /// (`ATTN_MMA_KERNELS`: 16 × 2, 16 × 4 and, for head_dim 128, 32 × 2).
    pub chunk: usize,
    pub stages: usize,
    /// Layers whose cache holds at least this many rows (the others keep `AttnChoice`'s).
    pub min_capacity: usize,
    /// Cache rows per split on caches of at least `AttnChoice::min_capacity` rows when the
    /// `AttnChoice` groups heads (`heads_per_block` set; otherwise, and on shorter caches,
    /// `split_rows_short`); at least 64, as the partials are sized for that. More on caches
    /// that would take over `max_splits_long` splits (`MmaAttn::long_rows`).
    pub split_rows_long: usize,
    /// Splits per KV head at most on the long caches (0: no cap): past it, the rows per split
    /// double until the splits fit. Measured on the H200 (bench/runs/2026-12-01-h200-v v10,
    /// with the warp-column merge, interleaved A/B): at depth 131,072 (257 splits of 512 rows)
    /// 1,024 rows 177.8-178.5 tok/s against 512's 174.2-175.1 and 256's 171.5-172.3; at depth
    /// 32,768 (65 splits) 512 rows 189.6-190.5 against 1,024's 188.3-189.2 and 256's
    /// 188.4-189.3: a cap between 65 and 257 splits (192) pays at 131,072. Default 192 (0:
    /// no cap) since round w (bench/runs/2026-12-01-h200-w w1: parity with the op checks at
    /// 1,024-row splits, 1,409 passed; the cap 177.3-178.1 tok/s against 174.1-174.7 at
    /// 131,072, 189.8-190.0 against 189.3-190.1 at 32,768).
    pub max_splits_long: usize,
    /// Cache rows per split on the other caches it takes (the 2,048-row sliding rings at
    /// depth; at least 64). Measured on the H200 (bench/runs/2026-12-01-h200-r, interleaved
    /// A/B): 512 and 256 rows slower than 128 (r3: 186.9 → 178.5 and 184.9 tok/s at depth
    /// 4,096); 64 faster (r8: 189.8-190.1 → 190.8-191.0 at 4,096, 185.7-186.0 → 186.6-187.0
    /// at 32,768; depth 0 unchanged): 32 splits, one 16-row chunk per warp.
    pub split_rows_short: usize,
    /// Q and P in f16 only (the `_h` variants, 16 × 2: half the mma and no hi/lo split)
    /// instead of f16 hi + lo parts (near f32). Rounds the scores by ~2^-12 of |q|·|k| and the
    /// probabilities by ~2^-12: held to the oracle's bar (op NMSE at most a tenth of what the
    /// output's int8 rounding adds: measured 2.2e-3 of it; the sessions' KL within the CPU
    /// path's). Default on: interleaved A/B on the H200 (bench/runs/2026-12-01-h200-r r4)
    /// 186.9-188.0 → 187.8-188.8 tok/s at depth 4,096, 183.7-184.0 → 184.8-184.9 at 32,768;
    /// at depth 0 no cache takes the tensor-core kernel.
    pub f16: bool,
}

impl MmaAttn {
    /// Rows per split on a long cache of `capacity` rows: `split_rows_long`, doubled until the
    /// splits are at most `max_splits_long` (when set).
    pub fn long_rows(&self, capacity: usize) -> usize {
        let mut rows = self.split_rows_long.max(1);
        while self.max_splits_long > 0 && capacity.div_ceil(rows) > self.max_splits_long {
            rows *= 2;
        }
        rows
    }
}

impl Default for MmaAttn {
    fn default() -> Self {
        MmaAttn {
            chunk: 16,
            stages: 2,
            min_capacity: 2048,
            split_rows_long: 512,
            max_splits_long: 192,
            split_rows_short: 64,
            f16: true,
        }
    }
}

impl Default for DecodeTuning {
    /// Measured on the H200 (bench/runs/2026-11-30-h200-e): Q6_K-only launches through
    /// `mvq_seg_44_lb4` (164.4 → 169.2 tok/s), the cluster norm tail (167.9 → 171.8), 256
    /// rows per split for the grouped attention; the folded QK-norm (h200-f); the folded
    /// SwiGLU (h200-g: 178.2 → 183.4 tok/s) and the one-exchange post-norm tail (182.2-183.4
    /// → 184.7-184.8); the tensor-core attention (h200-i) and the wide merge (h200-j).
    fn default() -> Self {
        DecodeTuning {
            q6k_kernel: SEG_KERNELS
                .iter()
                .find(|k| k.name == "mvq_seg_44_lb4")
                .copied(),
            cluster_norm: true,
            norm_one_sum: true,
            fold_qk: true,
            fold_swiglu: true,
            gate_up_flat: true,
            split_rows: 128,
            split_rows_grouped: 256,
            attn_mma: Some(MmaAttn::default()),
            wide_merge: Some(WideMerge::default()),
            fold_merge: Some(FOLD_MERGE_MAX_SPLITS),
            prefill_mma: true,
            span_graphs: true,
            l2_prefetch: Some(L2Prefetch::default()),
            attn_l1_prefetch: true,
            one_matrix: true,
            one_warps: 1,
            tail_prefetch: Some(TailPrefetch::default()),
            lm_flat: true,
            gate_up_streams: true,
            fold_argmax: true,
        }
    }
}

impl DecodeTuning {
    /// Plain launches, every kernel separate: the step as it ran before.
    pub const PLAIN: DecodeTuning = DecodeTuning {
        q6k_kernel: None,
        cluster_norm: false,
        norm_one_sum: false,
        fold_qk: false,
        fold_swiglu: false,
        gate_up_flat: false,
        split_rows: 128,
        split_rows_grouped: 128,
        attn_mma: None,
        wide_merge: None,
        fold_merge: None,
        prefill_mma: false,
        span_graphs: false,
        l2_prefetch: None,
        attn_l1_prefetch: false,
        one_matrix: false,
        one_warps: 4,
        tail_prefetch: None,
        lm_flat: false,
        gate_up_streams: false,
        fold_argmax: false,
    };
}

/// Launches `f` on `stream` with `args`, in thread-block clusters of `cluster` blocks when
/// above 1 (sm_90; the grid a multiple of it).
///
/// # Safety
/// The arguments must match the kernel's parameters and every address must be a live buffer
/// as large as the kernel indexes for the sizes passed with it.
pub(crate) unsafe fn launch_ex(
    stream: &CudaStream,
    f: &CudaFunction,
    cfg: LaunchConfig,
    args: &[KArg],
    cluster: u32,
) -> Result<()> {
    let err = |e: sys::CUresult| Error::Cuda(format!("launching a decode kernel: {e:?}"));
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| Error::Cuda(format!("binding the CUDA context: {e:?}")))?;
    let mut ptrs: Vec<*mut c_void> = args
        .iter()
        .map(|a| match a {
            KArg::P(p) => p as *const u64 as *mut c_void,
            KArg::I(i) => i as *const i32 as *mut c_void,
            KArg::F(x) => x as *const f32 as *mut c_void,
        })
        .collect();
    // SAFETY: an all-zero attribute is a valid value; the fields are set below.
    let mut attrs: [sys::CUlaunchAttribute; 1] = unsafe { std::mem::zeroed() };
    let mut n_attrs = 0;
    if cluster > 1 {
        let a = &mut attrs[0];
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim.x = cluster;
        a.value.clusterDim.y = 1;
        a.value.clusterDim.z = 1;
        n_attrs += 1;
    }
    let lc = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: n_attrs as u32,
    };
    // SAFETY: `ptrs` points at the values in `args`, alive for the call; the caller's contract
    // covers what the kernel does with them.
    let r = unsafe {
        sys::cuLaunchKernelEx(
            &lc,
            f.cu_function(),
            ptrs.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(err(e)),
    }
}
