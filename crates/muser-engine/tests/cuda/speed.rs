//! Speed measurements of the CUDA test binary (timed, never asserted): kernel bandwidth,
//! segment-kernel sweeps, session speed and profiles, the launch-tuning A/B, decode at depth.

use super::*;
use muser_engine::cuda::SEG_KERNELS;

pub(crate) fn bandwidth(cuda: &Cuda) {
    for (n_in, n_out) in [(6656usize, 19968usize), (19968, 6656)] {
        bandwidth_shape(cuda, n_in, n_out);
    }
}

/// `bandwidth` on one shape: every type through `matvec_device` (one token; Q4_K/Q6_K/Q5_K
/// with their activation quantization), then each compiled Q5_K variant.
fn bandwidth_shape(cuda: &Cuda, n_in: usize, n_out: usize) {
    let stream = cuda.stream();
    for ty in TYPES {
        let bytes = ty.bytes_for((n_in * n_out) as u64).unwrap() as usize;
        // Random bytes are fine for timing, but keep f16 scales finite: use a repeating block.
        let mut rng = Rng(7);
        let (blk, _) = weights(ty, n_in, 1, &mut rng);
        let w: Vec<u8> = blk.iter().copied().cycle().take(bytes).collect();
        let x: Vec<f32> = (0..n_in).map(|_| rng.f()).collect();
        let wd = stream.clone_htod(&w).unwrap();
        let xd = stream.clone_htod(&x).unwrap();
        let mut yd = stream.alloc_zeros::<f32>(n_out).unwrap();
        let mut variants: Vec<(String, Option<usize>)> = vec![(String::new(), None)];
        if ty == GgmlType::Q5_K {
            variants.extend(Q5K_KERNELS.iter().map(|k| (format!(" {}", k.0), Some(k.1))));
        }
        for (label, rows) in variants {
            let mut call = || match rows {
                None => cuda
                    .matvec_device(
                        ty,
                        &wd.as_view(),
                        &xd.as_view(),
                        &mut yd.as_view_mut(),
                        n_in,
                        n_out,
                        1,
                    )
                    .unwrap(),
                Some(r) => cuda
                    .matvec1_q5k_f32(
                        &wd.as_view(),
                        &xd.as_view(),
                        &mut yd.as_view_mut(),
                        n_in,
                        n_out,
                        r,
                    )
                    .unwrap(),
            };
            let s = gpu_ms(cuda, 50, &mut call) / 1e3;
            println!(
                "bandwidth {ty:5}{label} {n_out}x{n_in}: {:.1} us/call, {:.0} GB/s ({:.1} % of 4.28 TB/s)",
                s * 1e6,
                bytes as f64 / s / 1e9,
                bytes as f64 / s / 4.28e12 * 100.0
            );
        }
    }
}

/// GPU milliseconds per call of `f`, timed with events over `iters` calls queued behind a
/// spin (so host launch gaps do not count), after 3 warm-up calls.
pub(crate) fn gpu_ms(cuda: &Cuda, iters: usize, mut f: impl FnMut()) -> f64 {
    let st = cuda.stream();
    for _ in 0..3 {
        f();
    }
    cuda.spin(20_000_000).unwrap();
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let e0 = st.record_event(flags).unwrap();
    for _ in 0..iters {
        f();
    }
    let e1 = st.record_event(flags).unwrap();
    f64::from(e0.elapsed_ms(&e1).unwrap()) / iters as f64
}

/// The one-token segment kernels (`mvq1.cu`): every compiled variant on the decode shapes,
/// matvec only (activations quantized once), checked against the default variant.
/// `once`: a single launch of each variant on one shape per type (for `ncu`).
pub(crate) fn seg_sweep(cuda: &Cuda, once: bool) {
    let stream = cuda.stream();
    for ty in [GgmlType::Q4_K, GgmlType::Q6_K] {
        let shapes: &[(usize, usize)] = if once {
            &[(19968, 6656)]
        } else {
            &[(19968, 6656), (6656, 19968), (4096, 6656), (6656, 4096)]
        };
        for &(n_out, n_in) in shapes {
            let bytes = ty.bytes_for((n_in * n_out) as u64).unwrap() as usize;
            let mut rng = Rng(11);
            let (blk, _) = weights(ty, n_in, 1, &mut rng);
            let w: Vec<u8> = blk.iter().copied().cycle().take(bytes).collect();
            let x: Vec<f32> = (0..n_in).map(|_| rng.f()).collect();
            let wd = stream.clone_htod(&w).unwrap();
            let xd = stream.clone_htod(&x).unwrap();
            let mut act = Q8Act::new(cuda, n_in).unwrap();
            cuda.quantize_into(&xd.as_view(), &mut act, n_in).unwrap();
            let mut yd = stream.alloc_zeros::<f32>(n_out).unwrap();
            let mut reference: Option<Vec<f32>> = None;
            // Q6_K also in the split layout (default kernel), after the file-layout variants.
            let split = (ty == GgmlType::Q6_K)
                .then(|| cuda.q6k_split_from(&wd.as_view(), n_out, n_in, 1).unwrap());
            // Every variant on the file layout, and on the split layout for Q6_K.
            let variants: Vec<(SegKernel, bool)> = SEG_KERNELS
                .iter()
                .map(|k| (*k, false))
                .chain(
                    SEG_KERNELS
                        .iter()
                        .filter(|_| split.is_some())
                        .map(|k| (*k, true)),
                )
                .collect();
            for (k, is_split) in &variants {
                let mut run = || {
                    let mut segs = [Seg {
                        ty,
                        split: is_split.then_some(1),
                        w: match (&split, is_split) {
                            (Some(sw), true) => sw.as_view(),
                            _ => wd.as_view(),
                        },
                        y: yd.as_view_mut(),
                        n_out,
                    }];
                    cuda.matvec1_q8(*k, &mut segs, &act, n_in, None).unwrap();
                };
                if once {
                    run();
                    stream.synchronize().unwrap();
                    continue;
                }
                let ms = gpu_ms(cuda, 50, &mut run);
                let y = stream.clone_dtoh(&yd).unwrap();
                let diff = match &reference {
                    None => {
                        reference = Some(y);
                        0.0
                    }
                    Some(r) => r
                        .iter()
                        .zip(&y)
                        .map(|(a, b)| ((a - b) / a.abs().max(1.0)).abs())
                        .fold(0f32, f32::max),
                };
                println!(
                    "seg {ty:5} {n_out}x{n_in} {:24} {:7.1} us {:5.0} GB/s ({:4.1} %) max rel diff {diff:.1e}",
                    format!("{}{}", k.name, if *is_split { " split" } else { "" }),
                    ms * 1e3,
                    bytes as f64 / ms / 1e6,
                    bytes as f64 / ms / 1e6 / 4280.0 * 100.0
                );
            }
        }
    }
}

/// Per-kernel GPU time of one decode step (`CudaSession::profile_step`), summed by label.
pub(crate) fn print_profile(sess: &mut CudaSession, steps: usize) {
    // label → (ms, calls, weight bytes), summed over the steps.
    let mut by: Vec<(String, f64, usize, usize)> = Vec::new();
    for i in 0..steps {
        for (label, ms, bytes) in sess.profile_step((i * 17 + 3) as u32).unwrap() {
            match by.iter_mut().find(|e| e.0 == label) {
                Some(e) => {
                    e.1 += ms;
                    e.2 += 1;
                    e.3 += bytes;
                }
                None => by.push((label, ms, 1, bytes)),
            }
        }
    }
    let total: f64 = by.iter().map(|e| e.1).sum::<f64>() / steps as f64;
    let n_kernels: usize = by.iter().map(|e| e.2).sum::<usize>() / steps;
    let bytes: usize = by.iter().map(|e| e.3).sum::<usize>() / steps;
    println!(
        "profile: {n_kernels} marks per step, {total:.3} ms of GPU time per step (sum of events, no graph), {:.2} GB of weights: {:.0} GB/s overall",
        bytes as f64 / 1e9,
        bytes as f64 / total / 1e6
    );
    by.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (label, ms, n, b) in &by {
        let per_step = ms / steps as f64;
        let gbs = if *b > 0 {
            format!("{:6.0} GB/s", *b as f64 / ms / 1e6)
        } else {
            String::new()
        };
        println!(
            "profile {label:60} {:5} calls {per_step:8.3} ms/step {:5.1} % {:8.2} us/call {gbs}",
            n / steps,
            100.0 * per_step / total,
            1e3 * ms / *n as f64
        );
    }
}

/// Decode rate of `sess` in tok/s: two warm-up steps, then the best of `reps` runs of `n`
/// greedy steps over tokens `tok(i)` (argmax on the GPU).
pub(crate) fn decode_rate(
    sess: &mut CudaSession,
    reps: usize,
    n: usize,
    tok: impl Fn(usize) -> u32,
) -> f64 {
    for _ in 0..2 {
        sess.step_argmax(11).unwrap();
    }
    let mut best = 0f64;
    for _ in 0..reps {
        let t = Instant::now();
        for i in 0..n {
            sess.step_argmax(tok(i)).unwrap();
        }
        best = best.max(n as f64 / t.elapsed().as_secs_f64());
    }
    best
}

/// Decode speed of the whole-token session on a model file (e.g. the 30B synthetic one).
pub(crate) fn session_speed(opts: &CudaOptions, path: &str) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let t0 = Instant::now();
    let mut sess = CudaSession::new(&dev, &model, 256).unwrap();
    println!(
        "session on {path}: weights on the device in {:.1} s ({:.2} GB)",
        t0.elapsed().as_secs_f64(),
        dev.weight_bytes() as f64 / 1e9
    );
    // The older one-token kernels first (A/B), then the engine's choice.
    let chosen = dev.one_token_kernel();
    let mut configs = vec![("older q8act.cu kernels", None)];
    configs.extend(SEG_KERNELS.iter().map(|k| ("segment kernel", Some(*k))));
    for (what, k) in configs {
        dev.set_one_token_kernel(k);
        let mut sess = CudaSession::new(&dev, &model, 256).unwrap();
        println!("session with the {what} ({k:?})");
        for rep in 0..2 {
            let t = Instant::now();
            let n = 32;
            for i in 0..n {
                sess.step((i * 31 + 7) as u32).unwrap();
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "session decode {n} tokens (rep {rep}): {:.2} tok/s, {:.1} ms/token",
                n as f64 / s,
                1e3 * s / n as f64
            );
        }
        if k.is_none() || k == chosen {
            print_profile(&mut sess, 3);
        }
    }
    dev.set_one_token_kernel(chosen);
    let _ = &mut sess;
    tuning_ab(&dev, &model);
}

/// Decode speed with each launch tuning (SwiGLU separate, folded, folded with the
/// one-exchange norm tail: three interleaved rounds), the default last with its profile;
/// first the fold's full-size logits against the separate kernels', bit for bit.
pub(crate) fn tuning_ab(dev: &Cuda, model: &Glimmer) {
    let chosen = dev.decode_tuning();
    let separate = DecodeTuning {
        fold_swiglu: false,
        ..chosen
    };
    let folded = DecodeTuning {
        fold_swiglu: true,
        ..chosen
    };
    let logits_of = |tune: DecodeTuning| {
        dev.set_decode_tuning(tune);
        let mut sess = CudaSession::new(dev, model, 256).unwrap();
        (0..4u32)
            .flat_map(|i| sess.step(i * 977 + 5).unwrap())
            .collect::<Vec<f32>>()
    };
    let want = logits_of(separate);
    let got = logits_of(folded);
    let diff = got
        .iter()
        .zip(&want)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    println!(
        "full-size logits, 4 steps: fold_swiglu on vs off: {diff} of {} differ {}",
        want.len(),
        if diff == 0 { "ok" } else { "FAIL" }
    );
    // Neither, the fold alone, the fold and the one-exchange norm tail.
    let separate = DecodeTuning {
        norm_one_sum: false,
        ..separate
    };
    let fold_only = DecodeTuning {
        norm_one_sum: false,
        ..folded
    };
    let both = DecodeTuning {
        norm_one_sum: true,
        ..folded
    };
    let tunes = [
        separate, fold_only, both, separate, fold_only, both, separate, fold_only, both, chosen,
    ];
    for tune in tunes {
        dev.set_decode_tuning(tune);
        let mut sess = CudaSession::new(dev, model, 256).unwrap();
        let best = decode_rate(&mut sess, 3, 48, |i| (i * 31 + 7) as u32);
        println!(
            "tuning fold_swiglu {} norm_one_sum {}: {best:.2} tok/s ({:.3} ms/token, best of 3 x 48) {tune:?}",
            tune.fold_swiglu,
            tune.norm_one_sum,
            1e3 / best
        );
    }
    let mut sess = CudaSession::new(dev, model, 256).unwrap();
    print_profile(&mut sess, 3);
    dev.set_decode_tuning(chosen);
}

/// Decode at a synthetic depth (cache rows filled directly), and the KV memory against
/// muse-glimmer.md's arithmetic: (sliding layers × min(C, window) + full layers × C) × 1,024 B
/// per position for the real geometry (2 KV heads × 128 × f16 × K and V).
pub(crate) fn depth_speed(opts: &CudaOptions, path: &str, depth: usize) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let c = &model.cfg;
    let cap = depth + 64;
    let sess = CudaSession::new(&dev, &model, cap).unwrap();
    let n_sliding = c.sliding.iter().filter(|&&s| s).count();
    let expect = (n_sliding * c.sliding_window.min(cap) + (c.n_layer - n_sliding) * cap)
        * c.kv_dim()
        * 2
        * 2;
    println!(
        "depth {depth}: KV cache {} bytes for {cap} positions (arithmetic: {expect}) {}",
        sess.kv_bytes(),
        if sess.kv_bytes() == expect {
            "ok"
        } else {
            "MISMATCH"
        }
    );
    drop(sess);
    // The one-exchange norm tail on and off (with the SwiGLU fold) at depth, interleaved,
    // and the SwiGLU fold off (with neither) once.
    let chosen = dev.attention();
    let tuned = dev.decode_tuning();
    let on = DecodeTuning {
        fold_swiglu: true,
        norm_one_sum: true,
        ..tuned
    };
    let off = DecodeTuning {
        norm_one_sum: false,
        ..on
    };
    let separate = DecodeTuning {
        fold_swiglu: false,
        ..off
    };
    for (g, tune) in [
        (chosen, on),
        (chosen, off),
        (chosen, on),
        (chosen, off),
        (chosen, on),
        (chosen, separate),
    ] {
        dev.set_attention(g);
        dev.set_decode_tuning(tune);
        let mut sess = CudaSession::new(&dev, &model, cap).unwrap();
        sess.fill_synthetic(depth, 7).unwrap();
        let rate = decode_rate(&mut sess, 1, 32, |i| (i * 13 + 5) as u32);
        println!(
            "decode at depth {depth}, fold_swiglu {} norm_one_sum {}: {rate:.2} tok/s ({:.2} ms/token), attention {g:?}, {tune:?}",
            tune.fold_swiglu,
            tune.norm_one_sum,
            1e3 / rate
        );
        print_profile(&mut sess, 2);
    }
    dev.set_attention(chosen);
    dev.set_decode_tuning(tuned);
}

/// What each kernel class costs inside the graph: decode speed with it left out of every
/// layer (`CudaSession::set_omit`; wrong logits, timing only), interleaved rounds, at a
/// synthetic depth: `cuda_test omit PATH DEPTH`.
pub(crate) fn omit_costs(opts: &CudaOptions, path: &str, depth: usize) {
    use muser_engine::cuda::Omit;
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let mut sess = CudaSession::new(&dev, &model, depth + 256).unwrap();
    let none = Omit::default();
    let cases = [
        ("nothing", none),
        (
            "norm tails",
            Omit {
                norm_tails: true,
                ..none
            },
        ),
        (
            "merge",
            Omit {
                merge: true,
                ..none
            },
        ),
        (
            "attention + merge",
            Omit {
                attention: true,
                merge: true,
                ..none
            },
        ),
        ("qkvg", Omit { qkvg: true, ..none }),
        (
            "qk-norm (plain qkvg)",
            Omit {
                qk_norm: true,
                ..none
            },
        ),
        (
            "o_proj",
            Omit {
                o_proj: true,
                ..none
            },
        ),
    ];
    for round in 0..2 {
        for (what, omit) in cases {
            sess.set_omit(omit);
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                // Every rep starts at the same depth (the graph reads the placement).
                sess.fill_synthetic(depth, 7).unwrap();
                let rate = decode_rate(&mut sess, 1, 32, |i| (i * 31 + 7) as u32);
                best = best.min(1e3 / rate);
            }
            println!(
                "omit depth {depth} round {round}: {what:20} {best:.4} ms/token ({:.2} tok/s)",
                1e3 / best
            );
        }
    }
}

/// Decode speed of launch choices `variants` at a synthetic depth, interleaved over four
/// rounds (100 tokens each after 2 of warm-up, a fresh session of depth + 128 positions, as
/// `muser bench` sizes it for tg128), after a bit check of each variant's logits over 4 steps
/// at that depth against the first variant's where `same_bits` says they claim the same bits.
pub(crate) fn tune_ab(
    opts: &CudaOptions,
    path: &str,
    depth: usize,
    variants: &[(&str, DecodeTuning, bool)],
) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let tuned = dev.decode_tuning();
    let cap = depth + 128;
    if variants.iter().any(|v| v.2) {
        let logits_of = |tune: DecodeTuning| {
            dev.set_decode_tuning(tune);
            let mut sess = CudaSession::new(&dev, &model, cap).unwrap();
            if depth > 0 {
                sess.fill_synthetic(depth, 7).unwrap();
            }
            (0..4u32)
                .flat_map(|i| sess.step(i * 977 + 5).unwrap())
                .collect::<Vec<f32>>()
        };
        let want = logits_of(variants[0].1);
        for &(name, tune, same) in &variants[1..] {
            if same {
                let diff = bits_differ(&logits_of(tune), &want);
                println!(
                    "full-size logits, 4 steps at depth {depth}: {name} vs {}: {diff} of {} differ {}",
                    variants[0].0,
                    want.len(),
                    if diff == 0 { "ok" } else { "FAIL" }
                );
            }
        }
    }
    for round in 0..4 {
        for &(name, tune, _) in variants {
            dev.set_decode_tuning(tune);
            let mut sess = CudaSession::new(&dev, &model, cap).unwrap();
            if depth > 0 {
                sess.fill_synthetic(depth, 7).unwrap();
            }
            let rate = decode_rate(&mut sess, 1, 100, |i| (i * 13 + 5) as u32);
            println!(
                "ab depth {depth} round {round} {name:24}: {rate:.2} tok/s ({:.3} ms/token)",
                1e3 / rate
            );
        }
    }
    dev.set_decode_tuning(tuned);
}

/// Decode in long sessions holding few rows (a server's sessions: 4,096-8,192 positions),
/// attention laid out by span and by capacity (`DecodeTuning::span_graphs`), interleaved over
/// three rounds, 100 tokens each after 2 of warm-up (`cuda_test span PATH`).
pub(crate) fn span_ab(opts: &CudaOptions, path: &str) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let tuned = dev.decode_tuning();
    for (cap, depth) in [(4096, 0), (8192, 100), (4096, 1500)] {
        for round in 0..3 {
            for span_graphs in [true, false] {
                dev.set_decode_tuning(DecodeTuning {
                    span_graphs,
                    ..tuned
                });
                let mut sess = CudaSession::new(&dev, &model, cap).unwrap();
                if depth > 0 {
                    sess.fill_synthetic(depth, 7).unwrap();
                }
                let rate = decode_rate(&mut sess, 1, 100, |i| (i * 13 + 5) as u32);
                println!(
                    "span {cap} positions from depth {depth} round {round} by span {span_graphs:5}: {rate:.2} tok/s ({:.3} ms/token), graphs {:?}",
                    1e3 / rate,
                    sess.graph_spans()
                );
            }
        }
    }
    dev.set_decode_tuning(tuned);
}

/// FNV-1a over the bits of 4 steps' logits of a session at `depth` (the cache filled with
/// synthetic rows, seed 7), printed to compare two builds bit for bit (`cuda_test digest`).
pub(crate) fn digest(opts: &CudaOptions, path: &str, depth: usize) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let mut sess = CudaSession::new(&dev, &model, depth + 128).unwrap();
    if depth > 0 {
        sess.fill_synthetic(depth, 7).unwrap();
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for i in 0..4u32 {
        for x in sess.step(i * 977 + 5).unwrap() {
            for b in x.to_bits().to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    println!("digest depth {depth}: {h:016x}");
}

/// `sess` emptied, its cache filled to `depth` with synthetic rows, then two warm-up steps.
fn restart(sess: &mut CudaSession, depth: usize) {
    muser_engine::generate::Sequence::reset(sess).unwrap();
    if depth > 0 {
        sess.fill_synthetic(depth, 7).unwrap();
    }
    for _ in 0..2 {
        sess.step_argmax(11).unwrap();
    }
}

/// The host's share of a decode step at `depth`: 100 steps of `step_argmax` waited for one by
/// one (the argmax back, the next step's parameters up, the graph launched), against 100
/// greedy steps fed on the device (`greedy_fed`, the bench's loop since round b) and 100 steps
/// queued ahead with the argmax kernel and without it, then one wait; interleaved over three
/// rounds.
pub(crate) fn host_gap(opts: &CudaOptions, path: &str, depth: usize) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let n = 100;
    let mut sess = CudaSession::new(&dev, &model, depth + 4 * n + 16).unwrap();
    for round in 0..3 {
        for what in [
            "step_argmax, waited",
            "greedy_fed",
            "queued with argmax",
            "queued, no argmax",
        ] {
            restart(&mut sess, depth);
            let t = Instant::now();
            let toks = (0..n).map(|i| (i * 13 + 5) as u32);
            match what {
                "greedy_fed" => {
                    sess.greedy_fed(5, n).unwrap();
                }
                "step_argmax, waited" => toks.for_each(|t| {
                    sess.step_argmax(t).unwrap();
                }),
                w => toks.for_each(|t| sess.queue_step(t, w == "queued with argmax").unwrap()),
            }
            sess.synchronize().unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
            println!(
                "gap depth {depth} round {round} {what:22}: {ms:.4} ms/token ({:.2} tok/s)",
                1e3 / ms
            );
        }
    }
}

/// `greedy_fed` with the argmax folded into the LM head (`DecodeTuning::fold_argmax`) and
/// with the argmax kernel between the steps, interleaved over four rounds of 128 tokens at
/// `depth` on one session (the fold changes no graph): the rates, and whether both runs of a
/// round gave the same tokens (`cuda_test fedab PATH D...`).
pub(crate) fn fed_ab(opts: &CudaOptions, path: &str, depth: usize) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let tuned = dev.decode_tuning();
    let n = 128;
    let mut sess = CudaSession::new(&dev, &model, depth + n + 16).unwrap();
    for round in 0..4 {
        let mut runs = Vec::new();
        for fold in [false, true] {
            dev.set_decode_tuning(DecodeTuning {
                fold_argmax: fold,
                ..tuned
            });
            restart(&mut sess, depth);
            let t = Instant::now();
            let toks = sess.greedy_fed(5, n).unwrap();
            let rate = n as f64 / t.elapsed().as_secs_f64();
            println!(
                "fedab depth {depth} round {round} fold_argmax {fold:5}: {rate:.2} tok/s ({:.4} ms/token; folds: {})",
                1e3 / rate,
                sess.folds_argmax()
            );
            runs.push(toks);
        }
        println!(
            "fedab depth {depth} round {round}: the same {n} tokens {}",
            if runs[0] == runs[1] { "ok" } else { "FAIL" }
        );
    }
    dev.set_decode_tuning(tuned);
}
