//! `muser bench --streams`: aggregate decode throughput of several sequences decoded together
//! by the serving scheduler (continuous batching), like llama.cpp's batched-bench.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use muser_engine::{Glimmer, SamplingParams};

use crate::device::{backend, Device, Split};

/// A model on the device's batched backend (with CUDA: the host graph with GPU products, as
/// `muser serve` runs it).
pub fn open(
    path: &Path,
    device: Device,
    threads: Option<usize>,
    split: Split,
) -> Result<Arc<Glimmer>> {
    let b = backend(device, threads)?;
    let mut m = Glimmer::open(path, b).with_context(|| format!("loading {}", path.display()))?;
    m.set_split_policy(split.into());
    Ok(Arc::new(m))
}

/// One run: the aggregate greedy decode rate of `streams` sequences generating `n` tokens.
pub fn run_once(model: &Arc<Glimmer>, streams: usize, n: usize, seed: u64) -> Result<f64> {
    let sampling = SamplingParams {
        seed,
        ..SamplingParams::greedy()
    };
    Ok(muser_engine::sched::decode_rate(
        model, streams, n, &sampling,
    )?)
}
