//! Batched prefill checks of the CUDA test binary (on a GPU): prompts through
//! `CudaSession::prefill_with` (chunks of cuBLAS GEMMs and `kernels/prefill.cu`), then decode
//! steps, against cpu-ref at the oracle's bar on the rows after the prompt; and the cost of
//! short prompts batched against token by token (`cuda_test pfsmall PATH`).

use super::*;

/// `prefill_with(tokens[start..split], min_batch)` after decode steps over `tokens[..start]`,
/// then decode steps up to `end`, in a session of `cap` positions; the logits of rows
/// `split - 1 .. end` (the prompt's last token and every later one) against cpu-ref's, at the
/// bar of the CPU fast path on the same rows (`fast`: its logits for every row).
#[allow(clippy::too_many_arguments)]
fn prefill_case(
    dev: &Cuda,
    case: &OracleCase,
    fast: &[f32],
    cap: usize,
    start: usize,
    split: usize,
    end: usize,
    min_batch: usize,
) -> (bool, String) {
    let (tokens, v) = (case.tokens, case.v);
    let mut s = CudaSession::new(dev, case.gpu, cap).unwrap();
    for &t in &tokens[..start] {
        s.step(t).unwrap();
    }
    let mut got = s.prefill_with(&tokens[start..split], min_batch).unwrap();
    for &t in &tokens[split..end] {
        got.extend(s.step(t).unwrap());
    }
    let rows = (split - 1) * v..end * v;
    let (kl_cpu, d_cpu, _) = distance(&case.want[rows.clone()], &fast[rows.clone()], v);
    let (ok, kl, d, miss) = oracle_bar(&case.want[rows.clone()], &got, v, kl_cpu, d_cpu);
    let what = format!(
        "{cap} positions, steps 0..{start}, prefill {start}..{split} (batched from {min_batch}), steps {split}..{end}: KL {kl:.3e} max|Δ| {d:.3e} top1-miss {miss} (CPU fast path on those rows: {kl_cpu:.3e} / {d_cpu:.3e})"
    );
    (ok, what)
}

/// The batched prefill on one parity model: from the start and after a few decode steps,
/// prompts of one and of several chunks (the parity models' windows of 8 and 16 make chunks
/// that short, so the rings wrap inside a prompt), in a session shorter than the window, and
/// a short prompt under the default threshold (token by token), at the oracle's bar; and that
/// the batched path is available (cuBLAS is there).
pub(crate) fn prefill_checks(dev: &Cuda, case: &OracleCase, fast: &[f32]) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let name = case.name;
    let on = dev.batched_prefill();
    println!(
        "model {name:20} batched prefill available (cuBLAS): {on} {}",
        if on { "ok" } else { "FAIL" }
    );
    tally(on, &mut pass, &mut fail);
    let n = case.tokens.len();
    // A session shorter than the sliding window: the ring is the whole cache.
    let short = case.gpu.cfg.sliding_window.saturating_sub(2).max(3);
    let cases = [
        (64, 0, 2, n, 1),
        (64, 0, 24, n, 1),
        (64, 0, 39, n, 1),
        (64, 5, 30, n, 1),
        (64, 17, 21, n, 1),
        (short, 0, short - 1, short, 1),
        (64, 3, 9, n, muser_engine::cuda::PREFILL_MIN_BATCH),
    ];
    for (cap, start, split, end, min_batch) in cases {
        let (ok, what) = prefill_case(dev, case, fast, cap, start, split, end, min_batch);
        println!(
            "model {name:20} prefill {what} {}",
            if ok { "ok" } else { "FAIL" }
        );
        tally(ok, &mut pass, &mut fail);
    }
    // The CUDA-core attention kernel (pf_attend_g, where the tensor-core one does not apply):
    // the same bar.
    let tuned = dev.decode_tuning();
    dev.set_decode_tuning(DecodeTuning {
        prefill_mma: false,
        ..tuned
    });
    let (ok, what) = prefill_case(dev, case, fast, 64, 5, 30, n, 1);
    dev.set_decode_tuning(tuned);
    println!(
        "model {name:20} prefill (pf_attend_g) {what} {}",
        if ok { "ok" } else { "FAIL" }
    );
    tally(ok, &mut pass, &mut fail);
    // A failed prompt touches nothing: too long for the cache, then the session still works.
    let mut s = CudaSession::new(dev, case.gpu, 8).unwrap();
    let too_long = s.prefill_with(&case.tokens[..12], 1).is_err();
    let after = s.prefill_with(&case.tokens[..4], 1).map(|l| l.len());
    let ok = too_long && after.as_ref().is_ok_and(|&l| l == case.v) && s.len() == 4;
    println!(
        "model {name:20} prefill past the capacity refused, cache untouched: {too_long}, then {after:?} {}",
        if ok { "ok" } else { "FAIL" }
    );
    tally(ok, &mut pass, &mut fail);
    // The f16 copies kept on the device (`Cuda::keep_prefill_weights`) against the per-chunk
    // dequantization: the same bits (the same kernel makes both), and the report says kept.
    let run = || {
        let mut s = CudaSession::new(dev, case.gpu, 64).unwrap();
        let mut got = s.prefill_with(&case.tokens[..30], 1).unwrap();
        for &t in &case.tokens[30..33] {
            got.extend(s.step(t).unwrap());
        }
        got
    };
    dev.drop_prefill_weights();
    let per_chunk = run();
    let report = dev.keep_prefill_weights(&case.gpu.weights).unwrap();
    let kept = run();
    dev.drop_prefill_weights();
    let diff = bits_differ(&kept, &per_chunk);
    let ok = report.not_kept.is_none() && report.bytes > 0 && diff == 0;
    println!(
        "model {name:20} prefill with the f16 copies kept ({report}) vs dequantized per chunk: {diff} logits differ {}",
        if ok { "ok" } else { "FAIL" }
    );
    tally(ok, &mut pass, &mut fail);
    // (round z) The FFN gate/up matrices dequantized (and the decode steps' gate/up launches)
    // from the gate/up streams against the file's layout: the same bits.
    let tuned = dev.decode_tuning();
    let default = run();
    dev.set_decode_tuning(DecodeTuning {
        gate_up_streams: !tuned.gate_up_streams,
        ..tuned
    });
    let flipped = run();
    dev.set_decode_tuning(tuned);
    let diff = bits_differ(&default, &flipped);
    println!(
        "model {name:20} prefill and decode with the gate/up streams flipped (default {}): {diff} logits differ {}",
        tuned.gate_up_streams,
        if diff == 0 { "ok" } else { "FAIL" }
    );
    tally(diff == 0, &mut pass, &mut fail);
    (pass, fail)
}

/// Short prompts on a model file, batched (`prefill_with(.., 1)`) against one decode step a
/// token: the time of each, for the `MIN_BATCH` threshold; dequantized per chunk, then with
/// the f16 copies kept.
pub(crate) fn prefill_small(opts: &CudaOptions, path: &str) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    let mut sess = CudaSession::new(&dev, &model, 4096).unwrap();
    let toks: Vec<u32> = (0..1025u32).map(|i| (i * 7919 + 13) % 2300).collect();
    // Warm-up: the graph, the scratch, every weight matrix.
    sess.prefill_with(&toks[..40], 1).unwrap();
    for kept in [false, true] {
        if kept {
            println!(
                "pfsmall {}",
                dev.keep_prefill_weights(&model.weights).unwrap()
            );
            sess.prefill_with(&toks[..40], 1).unwrap();
        }
        prefill_sizes(&mut sess, &toks, kept);
    }
}

/// `cuda_test pfsmall`'s table for one setting of the f16 copies.
fn prefill_sizes(sess: &mut CudaSession, toks: &[u32], kept: bool) {
    for n in [2usize, 4, 8, 16, 32, 64, 128, 512, 1025] {
        let mut best = [f64::INFINITY; 2];
        for _ in 0..3 {
            for (i, min_batch) in [1, usize::MAX].into_iter().enumerate() {
                use muser_engine::generate::Sequence;
                sess.reset().unwrap();
                let t = Instant::now();
                sess.prefill_with(&toks[..n], min_batch).unwrap();
                best[i] = best[i].min(t.elapsed().as_secs_f64());
            }
        }
        println!(
            "pfsmall kept {kept:5} {n:5} tokens: batched {:8.2} ms ({:8.1} tok/s), token by token {:8.2} ms ({:8.1} tok/s)",
            1e3 * best[0],
            n as f64 / best[0],
            1e3 * best[1],
            n as f64 / best[1]
        );
    }
}

/// Long prompts on a model file with the tensor-core prefill attention and with the CUDA-core
/// one (`DecodeTuning::prefill_mma`), the f16 copies kept: best of 2 each
/// (`cuda_test pflong PATH`).
pub(crate) fn prefill_long(opts: &CudaOptions, path: &str) {
    let dev = Cuda::new(opts).unwrap();
    let model = Glimmer::open(path, Box::new(CpuRef::default())).unwrap();
    println!(
        "pflong {}",
        dev.keep_prefill_weights(&model.weights).unwrap()
    );
    let toks: Vec<u32> = (0..8192u32).map(|i| (i * 7919 + 13) % 2300).collect();
    let tuned = dev.decode_tuning();
    let mut sess = CudaSession::new(&dev, &model, 8192).unwrap();
    sess.prefill(&toks[..64]).unwrap();
    for n in [512usize, 2048, 8192] {
        for mma in [true, false] {
            dev.set_decode_tuning(DecodeTuning {
                prefill_mma: mma,
                ..tuned
            });
            let mut best = f64::INFINITY;
            for _ in 0..2 {
                use muser_engine::generate::Sequence;
                sess.reset().unwrap();
                let t = Instant::now();
                sess.prefill(&toks[..n]).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "pflong {n:5} tokens, tensor-core attention {mma:5}: {:8.2} ms ({:8.1} tok/s)",
                1e3 * best,
                n as f64 / best
            );
        }
    }
    dev.set_decode_tuning(tuned);
}
