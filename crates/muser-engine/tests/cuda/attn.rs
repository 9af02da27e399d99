//! Tensor-core attention and the wide split-K merge: op parity against an f64 reference,
//! session checks at the oracle's bar, and their A/B at depth (`cuda_test att PATH D...`).

use super::*;
use muser_engine::cuda::{AttnKernel, AttnShape, MmaAttn, WideMerge};

/// The tensor-core kernel's compiled variants (chunk rows, stages) for `hd`.
pub(crate) fn mma_variants(hd: usize) -> Vec<(usize, usize)> {
    let mut v = vec![(16, 2), (16, 4)];
    if hd == 128 {
        v.push((32, 2));
    }
    v
}

/// Every split-K attention kernel (+ the merge with its sigmoid gate) against an f64
/// reference over f16 K/V rings: wrapped and unwrapped windows, partial and full rings,
/// single rows, long NoPE planes (32,768 and 131,072 rows of the real geometry). The per-head
/// and grouped kernels are f32 and hold NMSE ≤ 1e-9 (the grouped ones bit-identical to the
/// per-head one); the tensor-core kernel (f16 hi + lo parts of q and p) is held to the same
/// NMSE bar. Every value must be finite.
pub(crate) fn attn_op_parity(cuda: &Cuda) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let mut worst_mma = 0f64;
    let mut worst_f16 = 0f64;
    let mut worst_wide = 0f64;
    // (n_head, n_head_kv, head_dim, capacity, first, n)
    let cases: &[(usize, usize, usize, usize, usize, usize)] = &[
        (32, 2, 128, 64, 0, 1),
        (32, 2, 128, 64, 0, 37),
        (32, 2, 128, 2048, 1000, 2048),
        (32, 2, 128, 2048, 0, 1500),
        (32, 2, 128, 2048, 2047, 2048),
        (32, 2, 128, 32_832, 0, 32_768),
        (32, 2, 128, 131_136, 0, 131_072),
        (16, 1, 128, 2048, 777, 2048),
        (64, 2, 128, 1000, 500, 999),
        (4, 1, 64, 8, 5, 8),
        (4, 1, 64, 300, 17, 300),
        (8, 2, 64, 64, 40, 64),
        (8, 2, 64, 9000, 123, 8999),
    ];
    for (ci, &(nh, nkv, hd, cap, first, n)) in cases.iter().enumerate() {
        let seed = 0xA77E_0000 + ci as u64;
        let mut rng = Rng(seed);
        let q: Vec<f32> = (0..nh * hd).map(|_| 4.0 * rng.f()).collect();
        let gate: Vec<f32> = (0..nh * hd).map(|_| 3.0 * rng.f()).collect();
        let plane = cap * nkv * hd;
        let k: Vec<u16> = (0..plane)
            .map(|_| half::f16::from_f32(rng.f()).to_bits())
            .collect();
        let v: Vec<u16> = (0..plane)
            .map(|_| half::f16::from_f32(rng.f()).to_bits())
            .collect();
        // f64 reference.
        let g = nh / nkv;
        let scale = 1.0 / (hd as f64).sqrt();
        let mut want = vec![0f64; nh * hd];
        for h in 0..nh {
            let kvh = h / g;
            let row = |j: usize| ((first + j) % cap) * nkv * hd + kvh * hd;
            let d: Vec<f64> = (0..n)
                .map(|j| {
                    let r = row(j);
                    (0..hd)
                        .map(|i| q[h * hd + i] as f64 * half::f16::from_bits(k[r + i]).to_f64())
                        .sum::<f64>()
                        * scale
                })
                .collect();
            let mx = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = d.iter().map(|x| (x - mx).exp()).collect();
            let tot: f64 = p.iter().sum();
            for i in 0..hd {
                let a: f64 = (0..n)
                    .map(|j| p[j] * half::f16::from_bits(v[row(j) + i]).to_f64())
                    .sum::<f64>()
                    / tot;
                let gt = gate[h * hd + i] as f64;
                want[h * hd + i] = a / (1.0 + (-gt).exp());
            }
        }
        // The NMSE of the output's int8 rounding (blocks of 32, d = max|x| / 127): what the
        // output projection's input loses anyway.
        let int8_floor = {
            let (mut num, mut den) = (0f64, 0f64);
            for b in want.chunks(32) {
                let d = b.iter().fold(0f64, |m, x| m.max(x.abs())) / 127.0;
                for x in b {
                    let r = if d > 0.0 { (x / d).round() * d } else { 0.0 };
                    num += (x - r).powi(2);
                    den += x * x;
                }
            }
            num / den.max(1e-300)
        };
        let mut kernels = vec![
            (AttnKernel::PerHead, 128),
            (AttnKernel::Grouped(4), 256),
            (AttnKernel::Grouped(8), 128),
        ];
        for (chunk, stages) in mma_variants(hd) {
            for rows in [128, 256, 512] {
                kernels.push((
                    AttnKernel::Mma(MmaAttn {
                        chunk,
                        stages,
                        min_capacity: 0,
                        split_rows_long: rows,
                        max_splits_long: 0,
                        split_rows_short: rows,
                        f16: false,
                    }),
                    rows,
                ));
            }
        }
        // (round r) f16-only products (16 × 2), also at 64 rows per split; (round v) 1,024,
        // the long caches' rows past MmaAttn::max_splits_long splits (MmaAttn::long_rows).
        for rows in [64, 128, 512, 1024] {
            let m = MmaAttn {
                min_capacity: 0,
                split_rows_long: rows,
                f16: true,
                ..MmaAttn::default()
            };
            kernels.push((AttnKernel::Mma(m), rows));
        }
        let mut kernels: Vec<(AttnKernel, usize, Option<WideMerge>, bool)> = kernels
            .into_iter()
            .map(|(k, r)| (k, r, None, false))
            .collect();
        // (cuda-att2) The wide merge after the per-head kernel and after the tensor-core one
        // (16 × 2) at 128 and 512 rows per split.
        for (wide, warp_columns) in [(256, false), (512, false), (256, true)] {
            let wide = WideMerge {
                threads: wide,
                min_splits: 0,
                warp_columns,
            };
            kernels.push((AttnKernel::PerHead, 128, Some(wide), false));
            for rows in [128, 512] {
                let m = MmaAttn {
                    min_capacity: 0,
                    split_rows_long: rows,
                    f16: false,
                    ..MmaAttn::default()
                };
                kernels.push((AttnKernel::Mma(m), rows, Some(wide), false));
            }
        }
        // The merge folded into the per-head and grouped launches (DecodeTuning::fold_merge):
        // the last block of a column merges with the serial merge's code, so the same bits as
        // the kernel with the separate merge (any number of splits, 1 to 1,024 here).
        for (kern, rows) in [
            (AttnKernel::PerHead, 128),
            (AttnKernel::Grouped(4), 256),
            (AttnKernel::Grouped(8), 128),
        ] {
            kernels.push((kern, rows, None, true));
        }
        let mut unfolded: Vec<(AttnKernel, usize, Vec<f32>)> = Vec::new();
        let mut per_head: Option<Vec<f32>> = None;
        for (kern, rows, wide_merge, fold_merge) in kernels {
            let sh = AttnShape {
                n_head: nh,
                n_head_kv: nkv,
                head_dim: hd,
                capacity: cap,
                first,
                n,
                split_rows: rows,
                wide_merge,
                fold_merge,
            };
            let Some(got) = cuda.attend_op(kern, &sh, &q, &k, &v, &gate).unwrap() else {
                println!("attn op case {ci} {kern:?}: not applicable (not counted)");
                continue;
            };
            let (mut num, mut den) = (0f64, 0f64);
            for (a, b) in got.iter().zip(&want) {
                num += (*a as f64 - b).powi(2);
                den += b * b;
            }
            let nmse = num / den.max(1e-300);
            let finite = got.iter().all(|x| x.is_finite());
            // f16-only products: at most a tenth of the NMSE that the int8 rounding of the
            // output (the output projection's input) adds to the exact result; else 1e-9.
            let f16 = matches!(kern, AttnKernel::Mma(m) if m.f16);
            let bar = if f16 { 0.1 * int8_floor } else { 1e-9 };
            let mut ok = finite && nmse <= bar;
            let mut note = String::new();
            match kern {
                _ if fold_merge => {
                    let same = unfolded.iter().any(|(k, r, u)| {
                        *k == kern
                            && *r == rows
                            && u.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits())
                    });
                    ok &= same;
                    note = format!(" merge folded, bit-identical to the separate merge: {same}");
                }
                _ if wide_merge.is_some() => worst_wide = worst_wide.max(nmse),
                AttnKernel::PerHead => {
                    per_head = Some(got.clone());
                    unfolded.push((kern, rows, got.clone()));
                }
                AttnKernel::Grouped(_) => {
                    unfolded.push((kern, rows, got.clone()));
                    // Bit-identical to the per-head kernel at the same rows per split only.
                    if rows == 128 {
                        let same = per_head.as_ref().is_some_and(|p| {
                            p.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits())
                        });
                        ok &= same;
                        note = format!(" bit-identical to per-head: {same}");
                    }
                }
                AttnKernel::Mma(m) if m.f16 => {
                    worst_f16 = worst_f16.max(nmse / int8_floor);
                    note =
                        format!(" (f16 products: bar {bar:.2e}, int8 rounding {int8_floor:.2e})");
                }
                AttnKernel::Mma(_) => worst_mma = worst_mma.max(nmse),
            }
            println!(
                "attn op case {ci} (seed {seed:#x}) heads {nh}/{nkv} hd {hd} ring {cap} first {first} n {n} {kern:?} rows {rows} wide merge {wide_merge:?} fold {fold_merge}: NMSE {nmse:.2e}{note} {}",
                if ok { "ok" } else { "FAIL" }
            );
            tally(ok, &mut pass, &mut fail);
        }
    }
    println!("attn op: worst tensor-core NMSE {worst_mma:.2e} (bar 1e-9)");
    println!("attn op: worst f16-product NMSE / int8-rounding NMSE {worst_f16:.2e} (bar 1e-1)");
    println!("attn op: worst wide-merge NMSE {worst_wide:.2e} (bar 1e-9)");
    (pass, fail)
}

/// The session with launch choice `tune` on one parity model: its logits held to the oracle's
/// bar (line "vs cpu-ref: cuda session {session} …"), and `expect` kernels picked by `is_kernel`
/// among its profile's labels (line "{applied} on {used} of {n_layer} layers"). Two checks.
fn option_checks(
    dev: &Cuda,
    case: &OracleCase<'_>,
    tune: DecodeTuning,
    (session, applied): (&str, &str),
    is_kernel: impl Fn(&str) -> bool,
    expect: usize,
) -> [bool; 2] {
    let name = case.name;
    dev.set_decode_tuning(tune);
    let (mut s2, got) = run_session(dev, case.gpu, case.tokens);
    let (ok, kl, d, miss) = oracle_bar(case.want, &got, case.v, case.kl_cpu, case.d_cpu);
    println!(
        "model {name:20} vs cpu-ref: cuda session {session} KL {kl:.3e} max|Δ| {d:.3e} top1-miss {miss} {}",
        if ok { "ok" } else { "FAIL" }
    );
    let labels = s2.profile_step(case.tokens[0]).unwrap();
    let used = labels.iter().filter(|(l, _, _)| is_kernel(l)).count();
    let ok_a = used == expect;
    println!(
        "model {name:20} {applied} on {used} of {} layers {}",
        case.gpu.cfg.n_layer,
        if ok_a { "ok" } else { "FAIL" }
    );
    [ok, ok_a]
}

/// On one parity model: the session with the tensor-core attention on every layer, held to
/// the oracle's bar (as close to cpu-ref as the CPU fast path: KL, max |Δ log p|, no top-1
/// change), and the profile's labels showing it on every layer where the geometry allows.
pub(crate) fn mma_session_checks(dev: &Cuda, case: &OracleCase<'_>) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let tuned = dev.decode_tuning();
    let c = &case.gpu.cfg;
    let g = c.n_head / c.n_head_kv;
    let applies = dev.compute_capability.0 >= 8
        && [64, 128].contains(&c.head_dim)
        && (g <= 16 || g % 16 == 0);
    let mut shapes: Vec<(usize, usize, bool)> = mma_variants(c.head_dim)
        .into_iter()
        .map(|(chunk, stages)| (chunk, stages, false))
        .collect();
    // (round r) f16-only products.
    shapes.push((16, 2, true));
    for (chunk, stages, f16) in shapes {
        let m = MmaAttn {
            chunk,
            stages,
            min_capacity: 0,
            split_rows_long: 256,
            max_splits_long: 0,
            split_rows_short: 64,
            f16,
        };
        let tune = DecodeTuning {
            attn_mma: Some(m),
            ..tuned
        };
        let v = if f16 { " f16" } else { "" };
        let labels = (
            &*format!("attn_mma {chunk}x{stages}{v}"),
            &*format!("tensor-core attention {chunk}x{stages}{v}"),
        );
        let is_mma = |l: &str| l.starts_with("attend_mma_");
        let expect = if applies { c.n_layer } else { 0 };
        for o in option_checks(dev, case, tune, labels, is_mma, expect) {
            tally(o, &mut pass, &mut fail);
        }
    }
    dev.set_decode_tuning(tuned);
    (pass, fail)
}

/// On one parity model (cuda-att2): the session with the wide split-K merge
/// (`DecodeTuning::wide_merge`: the group layout at 256 and 512 threads, and at 256 after the
/// tensor-core attention on every layer; the warp-column layout (round v, the default) alone
/// and after the tensor-core attention: the default's pair on long caches), held to the
/// oracle's bar like `mma_session_checks`, and the profile's labels showing the chosen merge
/// kernel on every layer (head_dim a multiple of 32: every parity model).
pub(crate) fn wide_merge_session_checks(dev: &Cuda, case: &OracleCase<'_>) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let tuned = dev.decode_tuning();
    let c = &case.gpu.cfg;
    let mma_all = MmaAttn {
        min_capacity: 0,
        split_rows_long: 256,
        ..MmaAttn::default()
    };
    let cases = [
        (256, false, None),
        (512, false, None),
        (256, false, Some(mma_all)),
        (256, true, None),
        (256, true, Some(mma_all)),
    ];
    for (wide, warp_columns, mma) in cases {
        let tune = DecodeTuning {
            wide_merge: Some(WideMerge {
                threads: wide,
                min_splits: 0,
                warp_columns,
            }),
            attn_mma: mma,
            // The folded merge would take the per-head layers' merge (few splits here).
            fold_merge: None,
            ..tuned
        };
        let what = if mma.is_some() {
            " after attn_mma 16x2"
        } else {
            ""
        };
        let cols = if warp_columns { " warp columns" } else { "" };
        let label = format!("wide merge {wide}{cols}{what}");
        let name = if warp_columns {
            "attend_merge_gate_q8_wv"
        } else {
            "attend_merge_gate_q8_w"
        };
        let is_wide = |l: &str| l == name;
        let expect = if c.head_dim % 32 == 0 { c.n_layer } else { 0 };
        for o in option_checks(dev, case, tune, (&label, &label), is_wide, expect) {
            tally(o, &mut pass, &mut fail);
        }
    }
    dev.set_decode_tuning(tuned);
    (pass, fail)
}

/// Decode speed at each depth for main's default (the serial merge), the session's default and
/// the wide merge at 256 / 512 threads, interleaved in two rounds (one at depths past 65,536),
/// best of 2 × 32 tokens each; then the per-kernel profile of "main" and of the default.
/// (h200-j r1 also ran the tensor-core attention with 8 warps per block and 256 / 1,024 rows
/// per split: not kept; see that README.)
pub(crate) fn attn_ab(opts: &CudaOptions, path: &str, depth: usize) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    // Room for the warm-up, two timed runs and the profile.
    let cap = depth + 256;
    let tuned = dev.decode_tuning();
    let merge = |threads: Option<usize>| DecodeTuning {
        wide_merge: threads.map(|threads| WideMerge {
            threads,
            min_splits: 0,
            warp_columns: false,
        }),
        ..tuned
    };
    let variants = [
        ("main", merge(None)),
        ("default", tuned),
        ("merge w256 all", merge(Some(256))),
        ("merge w512 all", merge(Some(512))),
    ];
    {
        let sess = CudaSession::new(&dev, &model, cap).unwrap();
        let c = &model.cfg;
        let n_sliding = c.sliding.iter().filter(|&&s| s).count();
        let expect = (n_sliding * c.sliding_window.min(cap) + (c.n_layer - n_sliding) * cap)
            * c.kv_dim()
            * 4;
        println!(
            "att depth {depth}: KV cache {} bytes for {cap} positions (arithmetic: {expect}) {}",
            sess.kv_bytes(),
            if sess.kv_bytes() == expect {
                "ok"
            } else {
                "MISMATCH"
            }
        );
    }
    let rounds = if depth > 65_536 { 1 } else { 2 };
    for round in 0..rounds {
        for (what, tune) in variants {
            dev.set_decode_tuning(tune);
            let mut sess = CudaSession::new(&dev, &model, cap).unwrap();
            sess.fill_synthetic(depth, 7).unwrap();
            let best = decode_rate(&mut sess, 2, 32, |i| (i * 13 + 5) as u32);
            println!(
                "att depth {depth} round {round} {what:20}: {best:.2} tok/s ({:.3} ms/token)",
                1e3 / best
            );
            if round == rounds - 1 && (what == "main" || what == "default") {
                print_profile(&mut sess, 2);
            }
        }
    }
    dev.set_decode_tuning(tuned);
}

/// On one parity model: the session with the split-K merge folded into the attention launch
/// (`DecodeTuning::fold_merge`) against the separate merge, in a session of 64 positions (one
/// split: the block finishes its head itself) and in one of 1,100 holding 600 synthetic rows
/// (a span of 1,024: eight splits on the full layers, the last block of each column merges
/// through the arrival counters): the same bits over every step, and the profile's labels
/// showing the folded kernels (`_m`) on every layer and no merge launch. Two checks each.
pub(crate) fn fold_merge_session_checks(
    dev: &Cuda,
    gpu: &Glimmer,
    tokens: &[u32],
    name: &str,
) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let tuned = dev.decode_tuning();
    for (cap, depth) in [(64, 0), (1100, 600)] {
        let run = |fold: Option<usize>| {
            dev.set_decode_tuning(DecodeTuning {
                fold_merge: fold,
                ..tuned
            });
            let mut s = CudaSession::new(dev, gpu, cap).unwrap();
            if depth > 0 {
                s.fill_synthetic(depth, 11).unwrap();
            }
            let mut got = Vec::new();
            for &t in tokens {
                got.extend(s.step(t).unwrap());
            }
            let labels = s.profile_step(tokens[0]).unwrap();
            (got, labels)
        };
        let (apart, _) = run(None);
        let (folded, labels) = run(Some(1024));
        let diff = bits_differ(&folded, &apart);
        println!(
            "model {name:20} merge folded into attention vs separate, {cap} positions from depth {depth}: {diff} logits differ {}",
            if diff == 0 { "ok" } else { "FAIL" }
        );
        tally(diff == 0, &mut pass, &mut fail);
        // `_mp`, `_mpl`: the same with the L2 (and L1) prefetch (DecodeTuning::l2_prefetch).
        let n_folded = labels
            .iter()
            .filter(|(l, _, _)| l.ends_with("_m") || l.ends_with("_mp") || l.ends_with("_mpl"))
            .count();
        let merges = labels
            .iter()
            .filter(|(l, _, _)| l.starts_with("attend_merge"))
            .count();
        let ok = n_folded == gpu.cfg.n_layer && merges == 0;
        println!(
            "model {name:20} folded merge on {n_folded} of {} layers, {merges} merge launches {}",
            gpu.cfg.n_layer,
            if ok { "ok" } else { "FAIL" }
        );
        tally(ok, &mut pass, &mut fail);
    }
    dev.set_decode_tuning(tuned);
    (pass, fail)
}

/// On one parity model: the attention laid out by span (`DecodeTuning::span_graphs`).
/// 1. A session of 2,100 positions over the parity tokens (span 128: one split where the
///    capacity alone would give 17) against cpu-ref at the oracle's bar.
/// 2. A session of 2,100 positions holding 100 synthetic rows, 40 steps (its rows cross 128 at
///    the 28th: graphs for spans 128 and 256), against the same by capacity (one graph, 2,100):
///    only split counts and so summation orders differ, so they are held to each other at the
///    oracle's bar (the CPU fast path's distance from cpu-ref on this model: int8
///    re-quantization of the activations turns rounding-level differences into steps of one
///    int8 unit, e.g. 3.0e-2 in log p on mid_hd128_h32_kv2, bench/runs/2026-11-30-h200-l
///    final). 3. The graphs captured are those spans. Three checks.
pub(crate) fn span_session_checks(dev: &Cuda, case: &OracleCase<'_>) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let (gpu, tokens, name) = (case.gpu, case.tokens, case.name);
    let tuned = dev.decode_tuning();
    let v = gpu.cfg.n_vocab;
    {
        dev.set_decode_tuning(DecodeTuning {
            span_graphs: true,
            ..tuned
        });
        let mut s = CudaSession::new(dev, gpu, 2100).unwrap();
        let mut got = Vec::new();
        for &t in tokens {
            got.extend(s.step(t).unwrap());
        }
        let (ok, kl, d, miss) = oracle_bar(case.want, &got, v, case.kl_cpu, case.d_cpu);
        println!(
            "model {name:20} vs cpu-ref: cuda session of 2100 positions, attention by span {:?}: KL {kl:.3e} max|Δ| {d:.3e} top1-miss {miss} {}",
            s.graph_spans(),
            if ok { "ok" } else { "FAIL" }
        );
        tally(ok, &mut pass, &mut fail);
    }
    let run = |span_graphs: bool| {
        dev.set_decode_tuning(DecodeTuning {
            span_graphs,
            ..tuned
        });
        let mut s = CudaSession::new(dev, gpu, 2100).unwrap();
        s.fill_synthetic(100, 5).unwrap();
        let mut got = Vec::new();
        for &t in tokens {
            got.extend(s.step(t).unwrap());
        }
        (got, s.graph_spans())
    };
    let (by_span, spans) = run(true);
    let (by_cap, caps) = run(false);
    dev.set_decode_tuning(tuned);
    let (ok, kl, d, miss) = oracle_bar(&by_cap, &by_span, v, case.kl_cpu, case.d_cpu);
    println!(
        "model {name:20} attention by span vs by capacity over 40 steps from depth 100: KL {kl:.3e} max|Δ log p| {d:.3e} top1-miss {miss} (bar: the CPU fast path's {:.3e} / {:.3e}) {}",
        case.kl_cpu,
        case.d_cpu,
        if ok { "ok" } else { "FAIL" }
    );
    tally(ok, &mut pass, &mut fail);
    let ok = spans == [128, 256] && caps == [2100];
    println!(
        "model {name:20} graphs captured by span {spans:?} (want [128, 256]), by capacity {caps:?} {}",
        if ok { "ok" } else { "FAIL" }
    );
    tally(ok, &mut pass, &mut fail);
    (pass, fail)
}
