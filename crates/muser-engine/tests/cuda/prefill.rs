//! Batched prefill checks of the CUDA test binary (on a GPU): prompts through
//! `CudaSession::prefill` (chunks of f16 cuBLAS GEMMs and `kernels/prefill.cu`), then decode
//! steps, against cpu-ref at the oracle's bar on the rows after the prompt.

use super::*;

/// `prefill` of `tokens[start..split]` after decode steps over `tokens[..start]`, then decode
/// steps over the rest; the logits of rows `split - 1 ..` (the prompt's last token and every
/// later one) against cpu-ref's, at the bar of the CPU fast path on the same rows (`fast`:
/// its logits for every row).
fn prefill_case(
    dev: &Cuda,
    case: &OracleCase,
    fast: &[f32],
    start: usize,
    split: usize,
) -> (bool, String) {
    let (tokens, v) = (case.tokens, case.v);
    let mut s = CudaSession::new(dev, case.gpu, 64).unwrap();
    for &t in &tokens[..start] {
        s.step(t).unwrap();
    }
    let mut got = s.prefill(&tokens[start..split]).unwrap();
    for &t in &tokens[split..] {
        got.extend(s.step(t).unwrap());
    }
    let rows = (split - 1) * v..;
    let (kl_cpu, d_cpu, _) = distance(&case.want[rows.clone()], &fast[rows.clone()], v);
    let (ok, kl, d, miss) = oracle_bar(&case.want[rows.clone()], &got, v, kl_cpu, d_cpu);
    let what = format!(
        "steps 0..{start}, prefill {start}..{split}, steps {split}..{}: KL {kl:.3e} max|Δ| {d:.3e} top1-miss {miss} (CPU fast path on those rows: {kl_cpu:.3e} / {d_cpu:.3e})",
        tokens.len()
    );
    (ok, what)
}

/// The batched prefill on one parity model: from the start and after a few decode steps,
/// prompts of one and of several chunks (the parity models' windows of 8 and 16 make chunks
/// that short, so the rings wrap inside a prompt), at the oracle's bar; and that the batched
/// path is the one that ran (cuBLAS is there).
pub(crate) fn prefill_checks(dev: &Cuda, case: &OracleCase, fast: &[f32]) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let name = case.name;
    let on = dev.batched_prefill();
    println!(
        "model {name:20} batched prefill available (cuBLAS): {on} {}",
        if on { "ok" } else { "FAIL" }
    );
    tally(on, &mut pass, &mut fail);
    for (start, split) in [(0, 2), (0, 24), (0, 39), (5, 30), (17, 21)] {
        let (ok, what) = prefill_case(dev, case, fast, start, split);
        println!(
            "model {name:20} prefill {what} {}",
            if ok { "ok" } else { "FAIL" }
        );
        tally(ok, &mut pass, &mut fail);
    }
    (pass, fail)
}
