//! Streaming, multi-threaded writer of synthetic GGUFs: tensors are cut into row chunks,
//! each chunk drawn from its own seeded stream and quantized on the rayon pool (ggml's
//! k-quant algorithms with the scale search off: the weights are random, so the extra
//! rounding error is irrelevant and the search would cost ~5x the time), and chunks are
//! written in order by a writer thread. Memory stays at a few chunks whatever the file size,
//! and the bytes do not depend on the thread count.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use muser_gguf::GgufBuilder;
use rayon::prelude::*;

use crate::config::SynthConfig;
use crate::error::{Error, Result};
use crate::plan::{self, Init, TensorPlan};
use crate::rng::{hash_str, Rng};
use crate::tokenizer::build_vocab;

/// Elements per generation chunk (rounded to whole rows). 1 Mi elements keeps a chunk's f32
/// staging at 4 MiB per worker.
const CHUNK_ELEMENTS: u64 = 1 << 20;

/// What was written.
#[derive(Debug, Clone)]
pub struct SynthReport {
    pub path: PathBuf,
    pub file_len: u64,
    pub n_tensors: usize,
    pub n_params: u64,
}

/// One unit of work: rows `[row0, row0 + n_rows)` of tensor `tensor`.
struct Job {
    tensor: usize,
    chunk: u64,
    row0: u64,
    n_rows: u64,
}

/// Writes the synthetic model to `path` (via a temporary file renamed at the end, so a
/// failed run never leaves a half-written model behind). `progress(done, total)` is called
/// with byte counts as data is written.
pub fn write_model(
    cfg: &SynthConfig,
    path: &Path,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<SynthReport> {
    cfg.validate()?;
    let vocab = build_vocab(cfg.n_vocab_text);
    let tensors = plan::tensors(cfg);
    let mut b = GgufBuilder::new();
    plan::metadata(cfg, &vocab, &mut b)?;
    for t in &tensors {
        b.tensor(t.name.clone(), &t.dims, t.ty)?;
    }
    let total = b.file_len();
    let header_len = b.header_bytes().len() as u64;

    let tmp = path.with_extension("gguf.partial");
    let io = |source| Error::Io {
        path: tmp.clone(),
        source,
    };
    let file = File::create(&tmp).map_err(io)?;
    let mut out = b.start(BufWriter::with_capacity(8 << 20, file))?;

    let jobs = jobs(&tensors);
    let window = rayon::current_num_threads().max(1) * 2;
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(window);
    let write_result = std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> Result<u64> {
            let mut done = header_len;
            progress(done, total);
            for chunk in rx {
                out.write(&chunk)?;
                done += chunk.len() as u64;
                progress(done, total);
            }
            let w = out.finish()?;
            let file = w
                .into_inner()
                .map_err(|e| muser_gguf::Error::Write(e.into_error()))?;
            file.sync_all().map_err(muser_gguf::Error::Write)?;
            Ok(done)
        });
        let gen = (|| -> Result<()> {
            for batch in jobs.chunks(window) {
                let chunks: Vec<Vec<u8>> = batch
                    .par_iter()
                    .map(|job| generate_chunk(cfg, &tensors[job.tensor], job))
                    .collect::<Result<_>>()?;
                for c in chunks {
                    if tx.send(c).is_err() {
                        // The writer stopped on an error; it reports it below.
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::Config("the writer thread panicked".into())));
        gen.and(written)
    });
    let result = write_result.map_err(|e| match e {
        Error::Gguf(muser_gguf::Error::Write(source)) => Error::Io {
            path: tmp.clone(),
            source,
        },
        other => other,
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(SynthReport {
        path: path.to_path_buf(),
        file_len: total,
        n_tensors: tensors.len(),
        n_params: tensors.iter().map(TensorPlan::n_elements).sum(),
    })
}

fn jobs(tensors: &[TensorPlan]) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let ne0 = t.dims[0].max(1);
        let rows: u64 = t.dims.iter().skip(1).product();
        let rows_per_chunk = (CHUNK_ELEMENTS / ne0).max(1);
        let mut row0 = 0;
        let mut chunk = 0;
        while row0 < rows {
            let n_rows = rows_per_chunk.min(rows - row0);
            jobs.push(Job {
                tensor: i,
                chunk,
                row0,
                n_rows,
            });
            row0 += n_rows;
            chunk += 1;
        }
    }
    jobs
}

/// Draws and quantizes one chunk. The stream depends only on (seed, tensor name, chunk).
fn generate_chunk(cfg: &SynthConfig, t: &TensorPlan, job: &Job) -> Result<Vec<u8>> {
    let ne0 = t.dims[0] as usize;
    let n = ne0 * job.n_rows as usize;
    let mut rng = Rng::keyed(&[cfg.seed, hash_str(&t.name), job.chunk]);
    let mut values = vec![0f32; n];
    let sqrt3 = 3f32.sqrt();
    match t.init {
        Init::Uniform { std } => {
            let a = std * sqrt3;
            values.iter_mut().for_each(|v| *v = a * rng.symmetric());
        }
        Init::Embedding {
            std,
            tiny_every,
            tiny,
        } => {
            for (r, row) in values.chunks_mut(ne0).enumerate() {
                let id = job.row0 + r as u64;
                let tiny_row =
                    tiny_every > 0 && id % u64::from(tiny_every) == u64::from(tiny_every) - 1;
                let a = std * sqrt3 * if tiny_row { tiny } else { 1.0 };
                row.iter_mut().for_each(|v| *v = a * rng.symmetric());
            }
        }
        Init::Around { centre, spread } => {
            values
                .iter_mut()
                .for_each(|v| *v = centre * (1.0 + spread * rng.symmetric()));
        }
        Init::Constant(c) => values.iter_mut().for_each(|v| *v = c),
    }
    let bytes =
        t.ty.bytes_for(n as u64)
            .ok_or_else(|| Error::Config(format!("tensor {:?}: bad row length", t.name)))?;
    let mut out = vec![0u8; bytes as usize];
    muser_quant::quantize_row_fast(t.ty, &values, &mut out).map_err(|source| Error::Quant {
        tensor: t.name.clone(),
        source,
    })?;
    Ok(out)
}
