//! The CUDA test binary's measurement commands (`cuda_test CMD [PATH] [D1 D2 ...]`): timing
//! experiments and A/B runs on a GPU, each printing what it measured (nothing without one).

use super::*;

/// The measurement commands (`cuda_test CMD [PATH] [D1 D2 ...]`, on a GPU; nothing without
/// one): returns whether `arg` was one.
pub(crate) fn measure(arg: Option<&str>) -> bool {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(2).cloned().unwrap_or_default();
    let depths: Vec<usize> = args.iter().skip(3).filter_map(|a| a.parse().ok()).collect();
    let opts = CudaOptions::default();
    let run = |f: &dyn Fn()| {
        if available() {
            f();
        }
    };
    // An interleaved A/B of the variants `f` makes from the default tuning, at the depths.
    let ab = |f: &dyn Fn(DecodeTuning) -> Vec<(&'static str, DecodeTuning, bool)>| {
        run(&|| {
            let v = f(Cuda::new(&opts).unwrap().decode_tuning());
            depths.iter().for_each(|&d| tune_ab(&opts, &path, d, &v))
        })
    };
    match arg {
        // Kernel speeds only (no parity).
        Some("bw") => run(&|| {
            let cuda = Cuda::new(&opts).unwrap();
            bandwidth(&cuda);
            seg_sweep(&cuda, false);
        }),
        // One launch of each segment-kernel variant, to run under `ncu`.
        Some("ncu") => run(&|| seg_sweep(&Cuda::new(&opts).unwrap(), true)),
        // The launch-tuning A/B on a model file, then decode at the depths.
        Some("ab") => run(&|| {
            {
                let dev = Cuda::new(&opts).unwrap();
                let model = Glimmer::open(&path, Box::new(CpuRef::default())).unwrap();
                tuning_ab(&dev, &model);
            }
            for &d in &depths {
                depth_speed(&opts, &path, d);
            }
        }),
        // The tensor-core attention A/B at the depths.
        Some("att") => run(&|| depths.iter().for_each(|&d| attn_ab(&opts, &path, d))),
        // Short prompts batched against token by token.
        Some("pfsmall") => run(&|| prefill::prefill_small(&opts, &path)),
        // Decode in long sessions holding few rows, attention by span and by capacity.
        Some("span") => run(&|| span_ab(&opts, &path)),
        // Long prompts, tensor-core prefill attention on and off.
        Some("pflong") => run(&|| prefill::prefill_long(&opts, &path)),
        // greedy_fed with the argmax folded into the LM head and without, at the depths.
        Some("fedab") => run(&|| depths.iter().for_each(|&d| fed_ab(&opts, &path, d))),
        // In-graph cost of each kernel class at the depths.
        Some("omit") => run(&|| depths.iter().for_each(|&d| omit_costs(&opts, &path, d))),
        // The folded split-K merge against the separate one at the depths.
        Some("fold") => ab(&|t| {
            let off = DecodeTuning {
                fold_merge: None,
                ..t
            };
            let all = DecodeTuning {
                fold_merge: Some(1024),
                ..t
            };
            vec![
                ("merge apart", off, false),
                ("default", t, true),
                ("fold all", all, true),
            ]
        }),
        // L2 prefetches beside the latency-bound kernels against none, at the depths.
        Some("prefetch") => ab(&|t| {
            let with = |b, q, o, g| prefetch_tune(t, (b, q, o, g));
            let none = DecodeTuning {
                l2_prefetch: None,
                attn_l1_prefetch: false,
                ..t
            };
            let l1 = |attn| DecodeTuning {
                attn_l1_prefetch: attn,
                ..t
            };
            vec![
                ("none", none, false),
                ("default", t, true),
                ("attention L1 flipped", l1(!t.attn_l1_prefetch), true),
                ("16: 60 100 12", with(16, 60, 100, 12), true),
                ("16: 100 100 25", with(16, 100, 100, 25), true),
                ("32: 60 100 12", with(32, 60, 100, 12), true),
            ]
        }),
        // The L2 prefetch's amounts around the default (blocks, Q/K/V/gate %, output
        // projection %, gate/up %), one at a time (round w).
        Some("pfsweep") => ab(&|t| {
            let p = t.l2_prefetch.unwrap_or_default();
            let with = |b, q, o, g| prefetch_tune(t, (b, q, o, g));
            let (b, q, o, g) = (p.blocks, p.qkvg, p.o_proj, p.gate_up);
            vec![
                ("default", t, false),
                ("blocks / 2", with(b / 2, q, o, g), false),
                ("blocks x 1.5", with(b * 3 / 2, q, o, g), false),
                ("qkvg x 2/3", with(b, q * 2 / 3, o, g), false),
                ("qkvg x 4/3", with(b, q * 4 / 3, o, g), false),
                ("o_proj x 2/3", with(b, q, o * 2 / 3, g), false),
                ("o_proj x 4/3", with(b, q, o * 4 / 3, g), false),
                ("gate_up x 2/3", with(b, q, o, g * 2 / 3), false),
                ("gate_up x 3/2", with(b, q, o, g * 3 / 2), false),
            ]
        }),
        // The Q/K/V/gate share of the L2 prefetch at 20, 15, 10 and 0 % (w9, when the default
        // was round m's 30 %; 20 % since), and 20 % with the output projection's 80 %.
        Some("pfqkvg") => ab(&|t| {
            let p = t.l2_prefetch.unwrap_or_default();
            let with = |q, o| prefetch_tune(t, (p.blocks, q, o, p.gate_up));
            vec![
                ("default", t, false),
                ("qkvg 20", with(20, p.o_proj), false),
                ("qkvg 15", with(15, p.o_proj), false),
                ("qkvg 10", with(10, p.o_proj), false),
                ("qkvg 0", with(0, p.o_proj), false),
                ("qkvg 20, o_proj 80", with(20, 80), false),
            ]
        }),
        // (round x) The matvec launches' tail prefetch (DecodeTuning::tail_prefetch): each
        // launch's blocks, once done, prefetch a span (from %, to %) of the next matvec; one
        // launch at a time, then all; every variant checked for the default's bits.
        Some("tailpf") => ab(&|t| {
            // Without any tail prefetch (the default before round x).
            let off = DecodeTuning {
                tail_prefetch: None,
                ..t
            };
            let with = |o, g, d, q| tail_tune(t, [o, g, d, q, (0, 0)]);
            let z = (0, 0);
            vec![
                ("none", off, false),
                ("down 0-10", with(z, z, (0, 10), z), true),
                ("down 0-20", with(z, z, (0, 20), z), true),
                ("qkvg 20-40", with(z, z, z, (20, 40)), true),
                ("o_proj 0-30", with((0, 30), z, z, z), true),
                ("gate_up 6-12", with(z, (6, 12), z, z), true),
                ("all", with((0, 30), (6, 12), (0, 10), (20, 40)), true),
            ]
        }),
        // (round x) The gate/up launch's tail prefetch of the down projection around x1's
        // best (0-10 %), and small spans of the other launches beside it.
        Some("tailsweep") => ab(&|t| {
            // Without any tail prefetch (the default before round x).
            let off = DecodeTuning {
                tail_prefetch: None,
                ..t
            };
            let with = |o, g, d, q| tail_tune(t, [o, g, d, q, (0, 0)]);
            let (z, d10) = ((0, 0), (0, 10));
            let lm = |t: DecodeTuning, lm_head| DecodeTuning {
                tail_prefetch: t.tail_prefetch.map(|p| TailPrefetch { lm_head, ..p }),
                ..t
            };
            vec![
                ("none", off, false),
                ("down 0-10", with(z, z, d10, z), false),
                ("down 0-5", with(z, z, (0, 5), z), false),
                ("down 0-7", with(z, z, (0, 7), z), false),
                ("down 0-14", with(z, z, (0, 14), z), false),
                ("down 0-10, qkvg 20-25", with(z, z, d10, (20, 25)), true),
                ("down 0-10, o_proj 0-10", with((0, 10), z, d10, z), true),
                ("down 0-10, gate_up 6-8", with(z, (6, 8), d10, z), true),
                (
                    "down 0-10, LM head 0-2",
                    lm(with(z, z, d10, z), (0, 2)),
                    true,
                ),
            ]
        }),
        // (round x) Each latency-bound launch's L2 prefetch moved (in part) to the tail of the
        // matvec launch before it, against the default; and the L2 prefetch re-swept with the
        // tail prefetch on.
        Some("tailmove") => ab(&|t| {
            let (p, tp) = (
                t.l2_prefetch.unwrap_or_default(),
                t.tail_prefetch.unwrap_or_default(),
            );
            let l2 = |q, o, g| prefetch_tune(t, (p.blocks, q, o, g));
            let moved = |q, o, g, tail: [(u8, u8); 3]| {
                let [to, tg, tq] = tail;
                tail_tune(l2(q, o, g), [to, tg, tp.down, tq, tp.lm_head])
            };
            let z = (0, 0);
            let (q, o, g) = (p.qkvg, p.o_proj, p.gate_up);
            vec![
                ("default", t, false),
                (
                    "qkvg moved to the down's tail",
                    moved(0, o, g, [z, z, (0, q)]),
                    true,
                ),
                (
                    "qkvg half moved",
                    moved(q / 2, o, g, [z, z, (q / 2, q)]),
                    true,
                ),
                (
                    "gate_up moved to the o_proj's tail",
                    moved(q, o, 0, [z, (0, g), z]),
                    true,
                ),
                (
                    "o_proj moved to the qkvg's tail",
                    moved(q, 0, g, [(0, o), z, z]),
                    true,
                ),
                ("l2 qkvg x 4/3", l2(q * 4 / 3, o, g), false),
                ("l2 gate_up x 3/2", l2(q, o, g * 3 / 2), false),
            ]
        }),
        // (round x) The KV rows the attention reads prefetched by the Q/K/V/gate launch's
        // blocks once done: the sliding rings, the full planes (a part), both.
        Some("tailkv") => ab(&|t| {
            let tp = t.tail_prefetch.unwrap_or_default();
            let with = |kv_sliding, kv_full| DecodeTuning {
                tail_prefetch: Some(TailPrefetch {
                    kv_sliding,
                    kv_full,
                    ..tp
                }),
                ..t
            };
            let z = (0, 0);
            vec![
                ("default", t, false),
                ("sliding rings", with((0, 100), z), true),
                ("sliding rings, first half", with((0, 50), z), false),
                ("full planes 0-25", with(z, (0, 25)), false),
                ("both", with((0, 100), (0, 25)), true),
            ]
        }),
        // (round y) The LM head as flat warps against the segment launch (the same bits).
        Some("lmflat") => ab(&|t| {
            vec![
                ("default", t, false),
                (
                    "LM head flat flipped",
                    DecodeTuning {
                        lm_flat: !t.lm_flat,
                        ..t
                    },
                    true,
                ),
            ]
        }),
        // (round z) The flat gate/up launch over the gate/up streams against the file's layout
        // (the same bits).
        Some("streams") => ab(&|t| {
            vec![
                ("default", t, false),
                (
                    "gate/up streams flipped",
                    DecodeTuning {
                        gate_up_streams: !t.gate_up_streams,
                        ..t
                    },
                    true,
                ),
            ]
        }),
        // The L2 prefetch's blocks and gate/up share in finer steps around the default (w11).
        Some("pffine") => ab(&|t| {
            let p = t.l2_prefetch.unwrap_or_default();
            let with = |b, g| prefetch_tune(t, (b, p.qkvg, p.o_proj, g));
            vec![
                ("default", t, false),
                ("blocks 12", with(12, p.gate_up), false),
                ("blocks 20", with(20, p.gate_up), false),
                ("gate_up 5", with(p.blocks, 5), false),
                ("gate_up 7", with(p.blocks, 7), false),
            ]
        }),
        // (2026-12-02, a1's leads after round z's layouts) more extra blocks with larger
        // Q/K/V/gate and output-projection shares, one at a time and together.
        Some("pfcombo") => ab(&|t| {
            let p = t.l2_prefetch.unwrap_or_default();
            let with = |b, q, o| prefetch_tune(t, (b, q, o, p.gate_up));
            let (b, q, o) = (p.blocks, p.qkvg, p.o_proj);
            vec![
                ("default", t, false),
                ("blocks x 1.5", with(b * 3 / 2, q, o), false),
                (
                    "blocks x 1.5, o_proj x 4/3",
                    with(b * 3 / 2, q, o * 4 / 3),
                    false,
                ),
                (
                    "blocks x 1.5, qkvg x 4/3",
                    with(b * 3 / 2, q * 4 / 3, o),
                    false,
                ),
                (
                    "blocks x 1.5, both x 4/3",
                    with(b * 3 / 2, q * 4 / 3, o * 4 / 3),
                    false,
                ),
                (
                    "blocks x 2, both x 4/3",
                    with(b * 2, q * 4 / 3, o * 4 / 3),
                    false,
                ),
                (
                    "blocks x 2, both x 3/2",
                    with(b * 2, q * 3 / 2, o * 3 / 2),
                    false,
                ),
            ]
        }),
        // The tensor-core attention's shapes (its chunk and ring, the rows per split of long
        // caches, the shortest cache it takes) against the default.
        Some("mma") => ab(&|t| {
            let m = t.attn_mma.unwrap_or_default();
            let with = |chunk, stages, min_capacity, split_rows_long| DecodeTuning {
                attn_mma: Some(MmaAttn {
                    chunk,
                    stages,
                    min_capacity,
                    split_rows_long,
                    // f16 products are compiled for 16 × 2 only.
                    f16: m.f16 && (chunk, stages) == (16, 2),
                    ..m
                }),
                ..t
            };
            let (c, st, mc, sl) = (m.chunk, m.stages, m.min_capacity, m.split_rows_long);
            vec![
                ("default", t, false),
                ("long splits 256", with(c, st, mc, 256), false),
                ("long splits 1024", with(c, st, mc, 1024), false),
                ("chunk 32 x 2", with(32, st, mc, sl), false),
                ("chunk 16 x 4", with(c, 4, mc, sl), false),
                ("from 4096 rows", with(c, st, 4096, sl), false),
            ]
        }),
        // The tensor-core attention's products in f16 only (the default) against hi + lo parts
        // (round r; r3 also ran 256 and 512 rows per split on the sliding rings: slower).
        Some("f16") => ab(&|t| {
            let hi_lo = with_mma(t, |m| MmaAttn { f16: false, ..m });
            vec![("hi + lo", hi_lo, false), ("default", t, false)]
        }),
        // The tensor-core attention's rows per split on the sliding rings (round r, r8).
        Some("short") => ab(&|t| {
            let with = |split_rows_short| {
                with_mma(t, |m| MmaAttn {
                    split_rows_short,
                    ..m
                })
            };
            vec![("128 rows", with(128), false), ("default", t, false)]
        }),
        // The sliding layers' 2,048-row rings through the per-head kernel with the merge
        // folded in (and its output-projection prefetch) instead of the tensor-core kernel
        // and a separate merge (not the same bits: held to the oracle's bar by parity's
        // attention checks).
        Some("sliding") => ab(&|t| {
            let m = t.attn_mma.unwrap_or_default();
            let per_head = |split_rows, fold| DecodeTuning {
                attn_mma: Some(MmaAttn {
                    min_capacity: 4096,
                    ..m
                }),
                split_rows,
                fold_merge: Some(fold),
                ..t
            };
            vec![
                ("default", t, false),
                ("per-head 128-row splits, fold 16", per_head(128, 16), false),
                ("per-head 256-row splits, fold 8", per_head(256, 8), false),
                ("per-head 512-row splits, fold 4", per_head(512, 4), false),
            ]
        }),
        // The gate/up launch as one stream of columns per warp against the passes.
        Some("flat") => run(&|| {
            let names = ["gate/up passes", "gate/up flat"];
            flag_ab(&opts, &path, &depths, names, |t, on| DecodeTuning {
                gate_up_flat: on,
                ..t
            })
        }),
        // One-matrix launches against the segment kernel.
        Some("one") => run(&|| {
            let names = ["segment kernel", "one-matrix kernels"];
            flag_ab(&opts, &path, &depths, names, |t, on| DecodeTuning {
                one_matrix: on,
                ..t
            })
        }),
        // The one-matrix launches at 1, 2 and 4 warps per block (the same bits).
        Some("warps") => ab(&|t| {
            let with = |one_warps| DecodeTuning { one_warps, ..t };
            vec![
                ("4 warps per block", with(4), false),
                ("2 warps per block", with(2), true),
                ("1 warp per block", with(1), true),
            ]
        }),
        // The wide merge at 64, 128 and 512 threads per block against the default's 256.
        Some("mt") => ab(&|t| {
            // (The group layout: the warp-column one has 256 threads whatever `threads` says.)
            let with = |threads| {
                with_merge(t, |w| WideMerge {
                    threads,
                    warp_columns: false,
                    ..w
                })
            };
            vec![
                ("default", t, false),
                ("64 threads", with(64), false),
                ("128 threads", with(128), false),
                ("512 threads", with(512), false),
            ]
        }),
        // The wide merge with the splits across each warp's lanes against the group layout
        // (another summation order: parity holds it to the oracle's bar).
        Some("wv") => ab(&|t| {
            let with = |warp_columns| with_merge(t, |w| WideMerge { warp_columns, ..w });
            vec![
                ("group layout", with(false), false),
                ("warp columns", with(true), false),
            ]
        }),
        // The tensor-core attention's rows per split on the long caches (the full layers at
        // depth) at 256 and 1,024 without a cap, and the default's 512 with and without its
        // cap (doubled past 192 splits, MmaAttn::max_splits_long).
        Some("long") => ab(&|t| {
            let with = |split_rows_long| {
                with_mma(t, |m| MmaAttn {
                    split_rows_long,
                    max_splits_long: 0,
                    ..m
                })
            };
            vec![
                ("default", t, false),
                ("256 rows per split", with(256), false),
                ("1024 rows per split", with(1024), false),
                ("512, no cap", with(512), false),
            ]
        }),
        // (round i) Each on/off default flipped alone against the default, to see whether a
        // choice measured in an earlier round still holds beside the later ones.
        Some("recheck") => ab(&|t| {
            vec![
                ("default", t, false),
                (
                    "fold_qk off",
                    DecodeTuning {
                        fold_qk: false,
                        ..t
                    },
                    true,
                ),
                (
                    "cluster_norm off",
                    DecodeTuning {
                        cluster_norm: false,
                        ..t
                    },
                    false,
                ),
                (
                    "attn_l1_prefetch off",
                    DecodeTuning {
                        attn_l1_prefetch: false,
                        ..t
                    },
                    true,
                ),
                (
                    "fold_merge off",
                    DecodeTuning {
                        fold_merge: None,
                        ..t
                    },
                    false,
                ),
                ("one_warps 2", DecodeTuning { one_warps: 2, ..t }, true),
                (
                    "tail_prefetch off",
                    DecodeTuning {
                        tail_prefetch: None,
                        ..t
                    },
                    true,
                ),
                (
                    "l2_prefetch off",
                    DecodeTuning {
                        l2_prefetch: None,
                        ..t
                    },
                    true,
                ),
                (
                    "lm_flat off",
                    DecodeTuning {
                        lm_flat: false,
                        ..t
                    },
                    true,
                ),
            ]
        }),
        // The default's decode rate at the depths (4 rounds; to compare builds in turn).
        Some("rate") => ab(&|t| vec![("default", t, false)]),
        // The host's share of a step: steps waited for one by one (the bench's loop) against
        // steps queued ahead (with and without the argmax kernel), at the depths.
        Some("gap") => run(&|| {
            depths
                .iter()
                .for_each(|&d| speed::host_gap(&opts, &path, d))
        }),
        // A digest of 4 steps' logits at the depths (synthetic KV rows), to compare builds.
        Some("digest") => run(&|| depths.iter().for_each(|&d| speed::digest(&opts, &path, d))),
        // Decode at the depths only.
        Some("depth") => run(&|| depths.iter().for_each(|&d| depth_speed(&opts, &path, d))),
        // `cuda_test PATH D1 ...`: session speed and decode at the depths.
        Some(file) if file != "parity" => run(&|| {
            session_speed(&opts, file);
            for d in args.iter().skip(2).filter_map(|a| a.parse().ok()) {
                depth_speed(&opts, file, d);
            }
        }),
        _ => return false,
    }
    true
}

/// `t` with its tensor-core attention settings (or the defaults) changed by `f`.
fn with_mma(t: DecodeTuning, f: impl FnOnce(MmaAttn) -> MmaAttn) -> DecodeTuning {
    DecodeTuning {
        attn_mma: Some(f(t.attn_mma.unwrap_or_default())),
        ..t
    }
}

/// `t` with its wide merge (the default's where off) changed by `f`.
fn with_merge(t: DecodeTuning, f: impl FnOnce(WideMerge) -> WideMerge) -> DecodeTuning {
    DecodeTuning {
        wide_merge: Some(f(t.wide_merge.unwrap_or_default())),
        ..t
    }
}

/// Interleaved A/B of one on/off tuning option (`set(default tuning, on)`), off against on,
/// at the depths; the two claim the same bits (checked on the full-size logits at depth 0).
fn flag_ab(
    opts: &CudaOptions,
    path: &str,
    depths: &[usize],
    names: [&str; 2],
    set: impl Fn(DecodeTuning, bool) -> DecodeTuning,
) {
    let t = Cuda::new(opts).unwrap().decode_tuning();
    let v = [
        (names[0], set(t, false), false),
        (names[1], set(t, true), true),
    ];
    depths.iter().for_each(|&d| tune_ab(opts, path, d, &v))
}

/// `t` with the L2 prefetch (extra blocks, Q/K/V/gate %, output projection %, gate/up %).
/// `t` with the tail prefetch's spans (output projection, gate/up, down, Q/K/V/gate, LM head;
/// no KV rows).
fn tail_tune(t: DecodeTuning, spans: [(u8, u8); 5]) -> DecodeTuning {
    let [o_proj, gate_up, down, qkvg, lm_head] = spans;
    DecodeTuning {
        tail_prefetch: Some(TailPrefetch {
            o_proj,
            gate_up,
            down,
            qkvg,
            lm_head,
            kv_sliding: (0, 0),
            kv_full: (0, 0),
        }),
        ..t
    }
}

fn prefetch_tune(
    t: DecodeTuning,
    (blocks, qkvg, o_proj, gate_up): (u32, u8, u8, u8),
) -> DecodeTuning {
    DecodeTuning {
        l2_prefetch: Some(L2Prefetch {
            blocks,
            qkvg,
            o_proj,
            gate_up,
        }),
        ..t
    }
}
