//! The post-attention norm tail folded into the FFN gate/up launch
//! (`DecodeTuning::norm_gate_up`): the same bits as the two launches, and the profile's
//! labels showing where it applies.

use muser_engine::cuda::{Cuda, CudaSession, DecodeTuning};
use muser_engine::Glimmer;

use super::{bits_differ, tally};

/// The label of the folded launch (session/norm_gate_up.rs).
const FOLDED: &str = "norm_tail_cl1 mode 2 + mv ffn_gate";

/// The label end of the gate/up streams' launch, folded or not.
const STREAMS: &str = " (streams) flat + swiglu_q8";

/// On `gpu`, sessions of 64 positions from depth 0 and of 1,100 from depth 600 (synthetic KV
/// rows), each over `tokens`: the folded launch with 0, 1 and 4 prefetched tiles per warp
/// against the two launches, every logit the same bits; and the folded launch on every layer
/// whose gate/up launch is the streams' (sm_90, whole clusters of rows), on every layer of the
/// real-geometry models. Returns (passed, failed).
pub(crate) fn norm_gate_up_session_checks(
    dev: &Cuda,
    gpu: &Glimmer,
    tokens: &[u32],
    name: &str,
) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let tuned = dev.decode_tuning();
    let run = |fold: Option<u32>, cap: usize, depth: usize| {
        dev.set_decode_tuning(DecodeTuning {
            norm_gate_up: fold,
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
    for (cap, depth) in [(64, 0), (1100, 600)] {
        let (apart, labels_apart) = run(None, cap, depth);
        for tiles in [0, 1, 4] {
            let (folded, labels) = run(Some(tiles), cap, depth);
            let diff = bits_differ(&folded, &apart);
            println!(
                "model {name:20} norm tail folded into gate/up ({tiles} tiles prefetched) vs apart, {cap} positions from depth {depth}: {diff} logits differ {}",
                if diff == 0 { "ok" } else { "FAIL" }
            );
            tally(diff == 0, &mut pass, &mut fail);
            if tiles != 1 || depth != 0 {
                continue;
            }
            let n_folded = labels
                .iter()
                .filter(|(l, _, _)| l.starts_with(FOLDED))
                .count();
            let streams = labels_apart
                .iter()
                .filter(|(l, _, _)| l.contains(STREAMS))
                .count();
            let c = &gpu.cfg;
            let fits = dev.compute_capability.0 >= 9
                && tuned.cluster_norm
                && tuned.norm_one_sum
                && c.n_ff % 256 == 0
                && c.n_embd % 256 == 0
                && c.n_embd <= 8192;
            let want = if fits { streams } else { 0 };
            let must = fits && name.starts_with("mid");
            let ok = n_folded == want && (!must || n_folded == c.n_layer);
            println!(
                "model {name:20} norm tail folded into gate/up on {n_folded} of {} layers ({streams} streams launches apart) {}",
                c.n_layer,
                if ok { "ok" } else { "FAIL" }
            );
            tally(ok, &mut pass, &mut fail);
        }
    }
    dev.set_decode_tuning(tuned);
    (pass, fail)
}
