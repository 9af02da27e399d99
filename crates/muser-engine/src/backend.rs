//! The narrow backend boundary: matrix products over quantized weights, the numerics of the
//! element-wise ops, and the KV element type. `cpu-ref` is the oracle; faster backends are
//! tested against it.

use rayon::prelude::*;

use crate::error::Result;
use crate::kv::KvDtype;
use crate::ops::Numerics;
use crate::weights::{Matrix, Weights};

/// What a device must provide to run the Glimmer graph.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    /// Arithmetic of the element-wise ops, norms and attention.
    fn numerics(&self) -> Numerics;
    /// Element type of the KV cache.
    fn kv_dtype(&self) -> KvDtype;
    /// `out: [n_tokens, m.n_out] = x: [n_tokens, m.n_in] · mᵀ`.
    fn matmul(
        &self,
        weights: &Weights,
        m: &Matrix,
        x: &[f32],
        n_tokens: usize,
        out: &mut [f32],
    ) -> Result<()>;

    /// Runs `f(i)` for every `i < n` in parallel (small per-head work such as attention).
    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..n).into_par_iter().for_each(f);
    }

    /// Several products over the same input (`outs[i]: [n_tokens, mats[i].n_out]`). Backends
    /// may run them as one dispatch; the results must equal separate [`Backend::matmul`]s.
    fn matmul_many(
        &self,
        weights: &Weights,
        mats: &[&Matrix],
        x: &[f32],
        n_tokens: usize,
        outs: &mut [&mut [f32]],
    ) -> Result<()> {
        one_by_one(self, weights, mats, x, n_tokens, outs)
    }

    /// How many threads this backend spreads its work over.
    fn threads(&self) -> usize {
        1
    }

    /// A twin of this backend that computes every result identically but on the calling
    /// thread only (`None`: no such twin). [`crate::Glimmer::forward_batch`] uses it to give
    /// each thread its own share of a decode batch of a small model.
    fn serial(&self) -> Option<&dyn Backend> {
        None
    }
}

/// `matmul_many` as separate `matmul`s.
fn one_by_one<B: Backend + ?Sized>(
    b: &B,
    weights: &Weights,
    mats: &[&Matrix],
    x: &[f32],
    n_tokens: usize,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    for (m, out) in mats.iter().zip(outs.iter_mut()) {
        b.matmul(weights, m, x, n_tokens, out)?;
    }
    Ok(())
}

/// The oracle: each weight row dequantized with the `_ref` dequantizers, dot products
/// accumulated in f64 against the unrounded f32 activations, one rounding to f32.
pub struct CpuRef {
    pub kv: KvDtype,
}

impl Default for CpuRef {
    fn default() -> Self {
        CpuRef { kv: KvDtype::F32 }
    }
}

impl Backend for CpuRef {
    fn name(&self) -> &'static str {
        "cpu-ref"
    }

    fn numerics(&self) -> Numerics {
        Numerics::Exact
    }

    fn kv_dtype(&self) -> KvDtype {
        self.kv
    }

    fn matmul(
        &self,
        weights: &Weights,
        m: &Matrix,
        x: &[f32],
        n_tokens: usize,
        out: &mut [f32],
    ) -> Result<()> {
        debug_assert_eq!(x.len(), n_tokens * m.n_in);
        debug_assert_eq!(out.len(), n_tokens * m.n_out);
        // Row-parallel: each output element is computed by one thread in a fixed order, so
        // the result does not depend on the thread count or the batch size.
        let cols: Vec<Vec<f32>> = (0..m.n_out)
            .into_par_iter()
            .map(|o| -> Result<Vec<f32>> {
                let mut row = vec![0f32; m.n_in];
                weights.dequantize_row(m, o, &mut row)?;
                Ok((0..n_tokens)
                    .map(|t| {
                        let xt = &x[t * m.n_in..(t + 1) * m.n_in];
                        let dot: f64 = row
                            .iter()
                            .zip(xt)
                            .map(|(&w, &a)| f64::from(w) * f64::from(a))
                            .sum();
                        dot as f32
                    })
                    .collect())
            })
            .collect::<Result<_>>()?;
        for (o, col) in cols.iter().enumerate() {
            for (t, &v) in col.iter().enumerate() {
                out[t * m.n_out + o] = v;
            }
        }
        Ok(())
    }
}

/// The fast CPU path: ggml's activation rounding (Q8_K for k-quants, Q8_0/Q8_1 for the legacy
/// formats, f16/bf16 for float weights), integer dot products with AVX2 when the CPU has it,
/// rows spread over the rayon pool; f16 KV cache. Each output is one dot product in a fixed
/// order, so a row's result does not depend on the batch it is computed in.
///
/// Decode steps (one token) run on a team of spinning threads: a step issues ~4 parallel
/// dispatches per layer, and waking sleeping workers for each costs more than the short ones
/// take (measured on the 2-core dev VM, 1 GB model: 36 → see bench/runs). Prefill uses rayon.
/// Products of up to this many rows (batched decode steps, small prompt chunks) run on the
/// spinning team like one-token steps; larger ones on rayon. Mixing the two pools within a
/// step made 8 batched sequences slower than one (the team's spinning workers took the cores
/// from rayon's): see bench/runs/2026-11-30-serve.
const TEAM_MAX_ROWS: usize = 64;

pub struct Cpu {
    isa: muser_quant::Isa,
    kv: KvDtype,
    team: muser_quant::SpinPool,
    serial: CpuSerial,
}

/// [`Cpu`]'s arithmetic on the calling thread only: the same kernels, so the same bits.
pub struct CpuSerial {
    isa: muser_quant::Isa,
    kv: KvDtype,
}

impl Cpu {
    /// `threads`: team size for decode (default: the available cores).
    pub fn new(threads: Option<usize>) -> Result<Cpu> {
        let n = threads
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1)
            .max(1);
        let team = muser_quant::SpinPool::new(n)
            .map_err(|e| crate::Error::Invalid(format!("cannot start {n} CPU threads: {e}")))?;
        let isa = muser_quant::Isa::detect();
        Ok(Cpu {
            isa,
            kv: KvDtype::F16,
            team,
            serial: CpuSerial {
                isa,
                kv: KvDtype::F16,
            },
        })
    }

    /// Forces an instruction set (e.g. `Isa::Scalar` to test the portable kernels), for the
    /// team and the serial twin alike (their results must stay the same bits).
    pub fn with_isa(mut self, isa: muser_quant::Isa) -> Cpu {
        self.isa = isa;
        self.serial.isa = isa;
        self
    }

    /// The instruction set of the kernels.
    pub fn isa(&self) -> muser_quant::Isa {
        self.isa
    }
}

/// The kernels of each matrix's weight type for `isa`.
fn kernels_for(mats: &[&Matrix], isa: muser_quant::Isa) -> Result<Vec<muser_quant::Kernels>> {
    let kernels = mats
        .iter()
        .map(|m| muser_quant::Kernels::new(m.ty, isa))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(kernels)
}

/// One `matmul_batch` job per (matrix, output), run on `threads`.
fn batch_on(
    threads: muser_quant::Threads<'_>,
    isa: muser_quant::Isa,
    weights: &Weights,
    mats: &[&Matrix],
    x: &[f32],
    n_tokens: usize,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    let kernels = kernels_for(mats, isa)?;
    let mut jobs: Vec<muser_quant::MatmulJob<'_>> = mats
        .iter()
        .zip(&kernels)
        .zip(outs.iter_mut())
        .map(|((m, k), out)| muser_quant::MatmulJob {
            kernels: k,
            w: weights.bytes(m),
            n_out: m.n_out,
            out,
        })
        .collect();
    muser_quant::matmul_batch_on(threads, &mut jobs, x, n_tokens)?;
    Ok(())
}

impl Backend for CpuSerial {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn numerics(&self) -> Numerics {
        Numerics::Ggml
    }

    fn kv_dtype(&self) -> KvDtype {
        self.kv
    }

    fn matmul(
        &self,
        weights: &Weights,
        m: &Matrix,
        x: &[f32],
        n_tokens: usize,
        out: &mut [f32],
    ) -> Result<()> {
        self.matmul_many(weights, &[m], x, n_tokens, &mut [out])
    }

    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..n).for_each(f);
    }

    fn matmul_many(
        &self,
        weights: &Weights,
        mats: &[&Matrix],
        x: &[f32],
        n_tokens: usize,
        outs: &mut [&mut [f32]],
    ) -> Result<()> {
        let calling = muser_quant::Threads::Calling;
        batch_on(calling, self.isa, weights, mats, x, n_tokens, outs)
    }
}

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn numerics(&self) -> Numerics {
        Numerics::Ggml
    }

    fn kv_dtype(&self) -> KvDtype {
        self.kv
    }

    fn matmul(
        &self,
        weights: &Weights,
        m: &Matrix,
        x: &[f32],
        n_tokens: usize,
        out: &mut [f32],
    ) -> Result<()> {
        self.matmul_many(weights, &[m], x, n_tokens, &mut [out])
    }

    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        self.team.for_each(n, f);
    }

    /// All the products in one parallel region (one activation quantization per rounding
    /// type, one synchronisation): one-token steps as matvecs on the team, up to
    /// `TEAM_MAX_ROWS` rows as one batch on the team, larger ones on rayon.
    fn matmul_many(
        &self,
        weights: &Weights,
        mats: &[&Matrix],
        x: &[f32],
        n_tokens: usize,
        outs: &mut [&mut [f32]],
    ) -> Result<()> {
        if n_tokens != 1 {
            // One quantization of the input and one dispatch for all the products.
            let threads = if n_tokens <= TEAM_MAX_ROWS {
                muser_quant::Threads::Team(&self.team)
            } else {
                muser_quant::Threads::Rayon
            };
            return batch_on(threads, self.isa, weights, mats, x, n_tokens, outs);
        }
        let kernels = kernels_for(mats, self.isa)?;
        let mut jobs: Vec<muser_quant::MatvecJob<'_>> = mats
            .iter()
            .zip(&kernels)
            .zip(outs.iter_mut())
            .map(|((m, k), out)| muser_quant::MatvecJob {
                kernels: k,
                w: weights.bytes(m),
                out,
            })
            .collect();
        muser_quant::matmul_multi_on(&self.team, &mut jobs, x)?;
        Ok(())
    }

    fn threads(&self) -> usize {
        self.team.size()
    }

    fn serial(&self) -> Option<&dyn Backend> {
        Some(&self.serial)
    }
}
