//! Which split-K attention kernel a layer gets: one query head per block (`attend_split_*`)
//! or 4-8 query heads of one KV group per block (`attend_group_*`), by cache capacity; or,
//! with `DecodeTuning::attn_mma`, the tensor-core kernel (`attend_mma_*`) for up to 16 heads
//! of a KV group per block. Also the split-K merge's launch (`DecodeTuning::wide_merge`).

/// Which attention kernel a layer's cache gets: grouped blocks of up to `heads_per_block`
/// query heads of one KV group for caches of at least `min_capacity` rows, one head per block
/// otherwise (and always when `heads_per_block` is `None`).
///
/// Measured on the H200 (30B synthetic; bench/runs/2026-11-30-h200-c r2, r3): grouped blocks
/// of 4 or 8 heads on every layer took attention from 39.9 to 26.8-27.2 µs per layer at
/// depth 32,768 and from 141 to 73 µs at 131,072, but from 7.7 to 15.8-18.7 µs at depth 0
/// and 15.4 to 17.2-18.6 µs at 4,096: short caches have too few split-K blocks to fill the
/// GPU once 4-8 heads share one (4 and 8 heads tie at depth; 4 makes twice the blocks).
/// Grouped on the full layers only (the sliding ones hold 2,048 rows): 149.8 → 154.3 tok/s at
/// depth 8,192, 140.8 → 148.8 at 16,384, 125.4 → 140.6 at 32,768, 69.5 → 93.5 at 131,072.
/// Hence 4 heads from 8,192 rows (not measured between 4,224 and 8,256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnChoice {
    pub heads_per_block: Option<usize>,
    pub min_capacity: usize,
}

impl Default for AttnChoice {
    fn default() -> Self {
        AttnChoice {
            heads_per_block: Some(4),
            min_capacity: 8_192,
        }
    }
}

impl AttnChoice {
    /// One query head per block everywhere (`attend_split_*`).
    pub const PER_HEAD: AttnChoice = AttnChoice {
        heads_per_block: None,
        min_capacity: 0,
    };

    /// Grouped blocks of up to `heads` query heads on every layer.
    pub const fn grouped(heads: usize) -> AttnChoice {
        AttnChoice {
            heads_per_block: Some(heads),
            min_capacity: 0,
        }
    }

    /// The heads-per-block preference for a layer whose cache holds `capacity` rows.
    pub(crate) fn for_capacity(&self, capacity: usize) -> Option<usize> {
        self.heads_per_block
            .filter(|_| capacity >= self.min_capacity)
    }
}

/// The grouped attention kernel for a preference of at most `pref` query heads per block:
/// its name and heads per block, or `None` when the heads of a KV group do not split into
/// compiled sizes (8 for head_dim ≤ 128, 4 for any; the per-head kernel then runs).
pub(crate) fn attn_group_kernel(
    pref: Option<usize>,
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
) -> Option<(&'static str, usize)> {
    let pref = pref?;
    if n_head_kv == 0 || n_head % n_head_kv != 0 {
        return None;
    }
    let g = n_head / n_head_kv;
    let gt = [8, 4]
        .into_iter()
        .find(|&t| t <= pref && g % t == 0 && (t == 4 || head_dim <= 128))?;
    let name = match (head_dim, gt) {
        (64, 4) => "attend_group_64_4",
        (64, 8) => "attend_group_64_8",
        (128, 4) => "attend_group_128_4",
        (128, 8) => "attend_group_128_8",
        (256, 4) => "attend_group_256_4",
        _ => return None,
    };
    Some((name, gt))
}

/// The per-head and grouped attention kernels with the split-K merge folded in
/// (`DecodeTuning::fold_merge`): name, folded name. Same arguments plus the merge's output,
/// gate, int8 row and the arrival counters.
pub(crate) const FOLDED_ATTENTION: &[(&str, &str)] = &[
    ("attend_split_64", "attend_split_64_m"),
    ("attend_split_128", "attend_split_128_m"),
    ("attend_split_256", "attend_split_256_m"),
    ("attend_group_64_4", "attend_group_64_4_m"),
    ("attend_group_64_8", "attend_group_64_8_m"),
    ("attend_group_128_4", "attend_group_128_4_m"),
    ("attend_group_128_8", "attend_group_128_8_m"),
    ("attend_group_256_4", "attend_group_256_4_m"),
];

/// The folded variant of attention kernel `name`, where there is one.
pub(crate) fn folded_attention(name: &str) -> Option<&'static str> {
    FOLDED_ATTENTION
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, f)| f)
}

// ---- Tensor-core attention (`attend_mma_*`, kernels/attend_mma.cu; DecodeTuning::attn_mma).

/// A compiled tensor-core attention variant (kernels/attend_mma.cu): its name, head_dim, rows
/// per warp chunk, cp.async stages per warp, and f16-only products (`MmaAttn::f16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MmaKernel {
    pub name: &'static str,
    pub head_dim: usize,
    pub chunk: usize,
    pub stages: usize,
    pub f16: bool,
}

const fn mk(
    name: &'static str,
    head_dim: usize,
    chunk: usize,
    stages: usize,
    f16: bool,
) -> MmaKernel {
    MmaKernel {
        name,
        head_dim,
        chunk,
        stages,
        f16,
    }
}

/// The compiled tensor-core attention variants.
pub(crate) const ATTN_MMA_KERNELS: &[MmaKernel] = &[
    mk("attend_mma_64_c16s2", 64, 16, 2, false),
    mk("attend_mma_64_c16s4", 64, 16, 4, false),
    mk("attend_mma_128_c16s2", 128, 16, 2, false),
    mk("attend_mma_128_c16s4", 128, 16, 4, false),
    mk("attend_mma_128_c32s2", 128, 32, 2, false),
    mk("attend_mma_64_c16s2_h", 64, 16, 2, true),
    mk("attend_mma_128_c16s2_h", 128, 16, 2, true),
];

/// Dynamic shared memory of a tensor-core attention block: 4 warps × `stages` × K and V
/// chunks of `chunk` rows of head_dim + 8 halves.
pub(crate) const fn attn_mma_smem(head_dim: usize, chunk: usize, stages: usize) -> usize {
    4 * stages * 2 * chunk * (head_dim + 8) * 2
}

/// The tensor-core attention kernel for `m` on this geometry: its name, its grid's x
/// (KV heads × blocks per KV group: a block takes up to 16 query heads of one group), and its
/// dynamic shared memory; `None` where it does not apply (no such variant, a group that is
/// neither at most 16 heads nor a multiple of 16, or a device without mma.sync (sm_80) or
/// that much shared memory per block).
pub(crate) fn attn_mma_kernel(
    m: &crate::cuda::MmaAttn,
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    cc: (i32, i32),
    max_smem: usize,
) -> Option<(&'static str, usize, usize)> {
    if cc.0 < 8 || n_head_kv == 0 || n_head % n_head_kv != 0 {
        return None;
    }
    let g = n_head / n_head_kv;
    if g > 16 && g % 16 != 0 {
        return None;
    }
    let name = ATTN_MMA_KERNELS
        .iter()
        .find(|k| (k.head_dim, k.chunk, k.stages, k.f16) == (head_dim, m.chunk, m.stages, m.f16))?
        .name;
    let smem = attn_mma_smem(head_dim, m.chunk, m.stages);
    (smem <= max_smem).then_some((name, n_head_kv * g.div_ceil(16), smem))
}

/// The split-K merge launch for `wide` (`DecodeTuning::wide_merge`) on a layer of `n_split`
/// splits, on a grid of n_head × head_dim / 32 blocks where a wide merge applies (at least
/// `wide.min_splits` splits, head_dim a multiple of 32): `attend_merge_gate_q8_wv` (256
/// threads) with `wide.warp_columns`, else `attend_merge_gate_q8_w` of `wide.threads` threads
/// (a power of two from 32 to 1,024); otherwise `attend_merge_gate_q8`, one block of 128
/// threads per head. All take the same arguments.
pub(crate) fn merge_launch(
    wide: Option<crate::cuda::WideMerge>,
    n_head: usize,
    head_dim: usize,
    n_split: usize,
) -> (&'static str, cudarc::driver::LaunchConfig) {
    if wide.is_some_and(|w| w.warp_columns && n_split >= w.min_splits) && head_dim % 32 == 0 {
        return (
            "attend_merge_gate_q8_wv",
            cudarc::driver::LaunchConfig {
                grid_dim: (n_head as u32, (head_dim / 32) as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            },
        );
    }
    match wide.map(|w| w.threads).filter(|&t| {
        wide.is_some_and(|w| n_split >= w.min_splits)
            && t.is_power_of_two()
            && (32..=1024).contains(&t)
            && head_dim % 32 == 0
    }) {
        Some(t) => (
            "attend_merge_gate_q8_w",
            cudarc::driver::LaunchConfig {
                grid_dim: (n_head as u32, (head_dim / 32) as u32, 1),
                block_dim: (t as u32, 1, 1),
                shared_mem_bytes: 0,
            },
        ),
        None => (
            "attend_merge_gate_q8",
            cudarc::driver::LaunchConfig {
                grid_dim: (n_head as u32, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{
        attn_group_kernel, attn_mma_kernel, folded_attention, merge_launch, AttnChoice,
        ATTN_MMA_KERNELS, FOLDED_ATTENTION,
    };
    use crate::cuda::{MmaAttn, WideMerge};

    #[test]
    fn every_mma_attention_variant_is_a_loaded_decode_kernel() {
        for k in ATTN_MMA_KERNELS {
            assert!(
                crate::cuda::session::DECODE_KERNELS.contains(&k.name),
                "{} is not in DECODE_KERNELS",
                k.name
            );
        }
    }

    #[test]
    fn every_folded_attention_kernel_is_loaded_and_folds_a_loaded_one() {
        let loaded = crate::cuda::session::DECODE_KERNELS;
        for (name, folded) in FOLDED_ATTENTION {
            assert!(loaded.contains(name), "{name} is not in DECODE_KERNELS");
            assert!(loaded.contains(folded), "{folded} is not in DECODE_KERNELS");
            assert_eq!(folded_attention(name), Some(*folded));
        }
        // The tensor-core kernels keep the separate merge.
        assert_eq!(folded_attention("attend_mma_128_c16s2"), None);
    }

    #[test]
    fn long_caches_double_their_rows_per_split_past_the_split_cap() {
        // Without a cap: 512 rows whatever the capacity.
        let none = MmaAttn {
            max_splits_long: 0,
            ..MmaAttn::default()
        };
        assert_eq!(none.long_rows(1 << 20), 512);
        // The default cap: 192 splits.
        let m = MmaAttn::default();
        assert_eq!(m.max_splits_long, 192);
        // Depth 32,768 (65 splits of 512) and 65,536 (129 with the room past it): 512 rows.
        assert_eq!(m.long_rows(32_896), 512);
        assert_eq!(m.long_rows(65_600), 512);
        // Past 192 splits: 1,024 rows at depth 131,072 (129 splits), 2,048 past 196,608.
        assert_eq!(m.long_rows(131_136), 1024);
        assert_eq!(m.long_rows(196_608), 1024);
        assert_eq!(m.long_rows(196_609), 2048);
    }

    #[test]
    fn mma_attention_applies_to_compiled_geometries_only() {
        let m = MmaAttn::default();
        let h200 = ((9, 0), 232_448);
        // The real model: 2 KV groups of 16 heads, one block per group.
        assert_eq!(
            attn_mma_kernel(&m, 32, 2, 128, h200.0, h200.1).map(|k| (k.0, k.1)),
            Some(("attend_mma_128_c16s2_h", 2))
        );
        // Q and P as hi + lo parts: the other variants.
        let hl = MmaAttn { f16: false, ..m };
        assert_eq!(
            attn_mma_kernel(&hl, 32, 2, 128, h200.0, h200.1).map(|k| k.0),
            Some("attend_mma_128_c16s2")
        );
        let hl4 = MmaAttn { stages: 4, ..hl };
        assert_eq!(
            attn_mma_kernel(&hl4, 8, 2, 64, h200.0, h200.1).map(|k| k.0),
            Some("attend_mma_64_c16s4")
        );
        // f16 products are compiled for 16 × 2 only.
        assert_eq!(
            attn_mma_kernel(&MmaAttn { stages: 4, ..m }, 32, 2, 128, h200.0, h200.1),
            None
        );
        // 32 heads per group: two blocks per group; 4 per group: one (zero rows padded).
        assert_eq!(
            attn_mma_kernel(&m, 64, 2, 128, h200.0, h200.1).map(|k| k.1),
            Some(4)
        );
        assert_eq!(
            attn_mma_kernel(&m, 8, 2, 64, h200.0, h200.1).map(|k| k.1),
            Some(2)
        );
        // 24 heads per group, head_dim 256, sm_75, too little shared memory: not applied.
        assert_eq!(attn_mma_kernel(&m, 48, 2, 128, h200.0, h200.1), None);
        assert_eq!(attn_mma_kernel(&m, 32, 2, 256, h200.0, h200.1), None);
        assert_eq!(attn_mma_kernel(&m, 32, 2, 128, (7, 5), h200.1), None);
        assert_eq!(attn_mma_kernel(&m, 32, 2, 128, h200.0, 48 * 1024), None);
    }

    #[test]
    fn wide_merge_applies_to_powers_of_two_and_whole_int8_blocks() {
        let wide = |threads, warp_columns| {
            Some(WideMerge {
                threads,
                min_splits: 8,
                warp_columns,
            })
        };
        let w = |threads| wide(threads, false);
        let (name, cfg) = merge_launch(w(256), 32, 128, 8);
        assert_eq!(name, "attend_merge_gate_q8_w");
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((32, 4, 1), (256, 1, 1)));
        assert_eq!(merge_launch(w(512), 8, 64, 65).1.grid_dim, (8, 2, 1));
        // Too few splits (the depth-0 caches: 1-2), no such block size, off.
        let cases = [
            (w(256), 128, 7),
            (w(256), 128, 1),
            (None, 128, 65),
            (w(384), 128, 65),
            (w(2048), 128, 65),
            (w(16), 64, 65),
        ];
        for (wide, hd, n_split) in cases {
            let (name, cfg) = merge_launch(wide, 32, hd, n_split);
            assert_eq!(name, "attend_merge_gate_q8");
            assert_eq!((cfg.grid_dim, cfg.block_dim), ((32, 1, 1), (128, 1, 1)));
        }
        // The warp-column layout: 256 threads whatever `threads` says, the same split floor,
        // whole int8 blocks.
        let wv = |threads| wide(threads, true);
        let (name, cfg) = merge_launch(wv(512), 32, 128, 65);
        assert_eq!(name, "attend_merge_gate_q8_wv");
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((32, 4, 1), (256, 1, 1)));
        assert_eq!(merge_launch(wv(256), 32, 128, 7).0, "attend_merge_gate_q8");
        assert_eq!(merge_launch(wv(256), 32, 48, 65).0, "attend_merge_gate_q8");
        // Every merge the launch can pick is loaded with the session's module.
        for name in [
            "attend_merge_gate_q8",
            "attend_merge_gate_q8_w",
            "attend_merge_gate_q8_wv",
        ] {
            assert!(super::super::DECODE_KERNELS.contains(&name), "{name}");
        }
    }

    #[test]
    fn grouped_attention_only_for_long_caches_by_default() {
        let d = AttnChoice::default();
        assert_eq!(d.for_capacity(2048), None);
        assert_eq!(d.for_capacity(4224), None);
        assert_eq!(d.for_capacity(8256), Some(4));
        assert_eq!(d.for_capacity(32_832), Some(4));
        assert_eq!(AttnChoice::PER_HEAD.for_capacity(1 << 20), None);
        assert_eq!(AttnChoice::grouped(8).for_capacity(1), Some(8));
    }

    #[test]
    fn grouped_attention_picks_a_compiled_size_or_none() {
        // The real model: 32 heads, 2 KV heads (16 per group), head_dim 128.
        assert_eq!(
            attn_group_kernel(Some(8), 32, 2, 128),
            Some(("attend_group_128_8", 8))
        );
        assert_eq!(
            attn_group_kernel(Some(4), 32, 2, 128),
            Some(("attend_group_128_4", 4))
        );
        assert_eq!(attn_group_kernel(None, 32, 2, 128), None);
        // 4 heads per group: 4; head_dim 256 never takes 8.
        assert_eq!(
            attn_group_kernel(Some(8), 8, 2, 64),
            Some(("attend_group_64_4", 4))
        );
        assert_eq!(
            attn_group_kernel(Some(8), 16, 1, 256),
            Some(("attend_group_256_4", 4))
        );
        // Groups of 1 or 2 heads, or an unknown head size: the per-head kernel.
        assert_eq!(attn_group_kernel(Some(8), 4, 2, 64), None);
        assert_eq!(attn_group_kernel(Some(8), 4, 4, 64), None);
        assert_eq!(attn_group_kernel(Some(8), 16, 1, 96), None);
        assert_eq!(attn_group_kernel(Some(8), 16, 0, 128), None);
    }
}
