//! CPU matrix multiplication `out = x · Wᵀ` over ggml-layout weights, as ggml's
//! `mul_mat` computes it: each token's activation row is quantized once to the weight type's
//! `vec_dot_type`, then every output element is one [`Kernels`] dot product.
//!
//! Batch invariance: an output element depends only on its weight row and its token's
//! activation row, through the same kernel and the same reduction order, whatever
//! `n_tokens`, the row chunking or the thread count.

use muser_gguf::GgmlType;
use rayon::prelude::*;

use crate::api::row_size;
use crate::error::{check_len, Error, Result};
use crate::matmul_batch::{matmul_batch, MatmulJob};
use crate::q8::{activation_row_size, quantize_activation_into};
use crate::spin_pool::SpinPool;
use crate::vecdot::Kernels;

/// Output rows per parallel task (16-256 measured on the 1 GB decode bench: 32-128 best).
pub(crate) const ROWS_PER_TASK: usize = 64;

/// Below this many weight bytes × tokens, run on the calling thread.
pub(crate) const PARALLEL_MIN_WORK: usize = 1 << 16;

/// `out[t][r] = dot(w row r, x row t)` with the best kernels for this CPU.
///
/// `w`: `n_out` ggml rows of `n_in` elements of `weight_ty` (exactly
/// `n_out * row_size(weight_ty, n_in)` bytes); `x`: `[n_tokens, n_in]` row-major;
/// `out`: `[n_tokens, n_out]` row-major. Multi-threaded on rayon's global pool.
pub fn matmul(
    weight_ty: GgmlType,
    w: &[u8],
    n_in: usize,
    n_out: usize,
    x: &[f32],
    n_tokens: usize,
    out: &mut [f32],
) -> Result<()> {
    let kernels = Kernels::detect(weight_ty)?;
    matmul_with(&kernels, w, n_in, n_out, x, n_tokens, out)
}

fn mul(what: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::Length {
        what,
        expected: usize::MAX,
        actual: a,
    })
}

/// [`matmul`] with explicit kernels (e.g. `Kernels::new(ty, Isa::Scalar)` to force the
/// portable path). One job of [`matmul_batch`] (which also runs on a [`SpinPool`]).
pub fn matmul_with(
    kernels: &Kernels,
    w: &[u8],
    n_in: usize,
    n_out: usize,
    x: &[f32],
    n_tokens: usize,
    out: &mut [f32],
) -> Result<()> {
    let w_row = row_size(kernels.weight_type(), n_in)?;
    // The input's quantized row size must exist for this width (checked here, used below).
    activation_row_size(kernels.act_type(), n_in)?;
    check_len(
        "matmul weight bytes",
        mul("matmul weight bytes (overflow)", n_out, w_row)?,
        w.len(),
    )?;
    check_len(
        "matmul input length",
        mul("matmul input length (overflow)", n_tokens, n_in)?,
        x.len(),
    )?;
    check_len(
        "matmul output length",
        mul("matmul output length (overflow)", n_tokens, n_out)?,
        out.len(),
    )?;
    if n_tokens == 0 || n_out == 0 {
        return Ok(());
    }
    let mut job = [MatmulJob {
        kernels,
        w,
        n_out,
        out,
    }];
    matmul_batch(None, &mut job, x, n_tokens)
}

/// One matrix of a [`matmul_multi`] call: `out: [n_out]` = weight rows · the shared input.
pub struct MatvecJob<'a> {
    pub kernels: &'a Kernels,
    /// `n_out` ggml rows of the shared `n_in` elements.
    pub w: &'a [u8],
    pub out: &'a mut [f32],
}

/// [`matmul_multi`] on a [`SpinPool`]: the tasks are split statically into one contiguous,
/// byte-balanced share per team member. Results are identical to [`matmul_multi`].
pub fn matmul_multi_on(pool: &SpinPool, jobs: &mut [MatvecJob<'_>], x: &[f32]) -> Result<()> {
    multi(Some(pool), jobs, x)
}

/// Several matrix–vector products over the same input row (a decode step's Q/K/V/gate, or the
/// FFN's gate/up) in one parallel region: the input is quantized once per activation type and
/// all rows of all matrices share one pool of tasks, so there is one synchronisation instead of
/// one per matrix. Each output is the same dot product [`matmul_with`] computes.
pub fn matmul_multi(jobs: &mut [MatvecJob<'_>], x: &[f32]) -> Result<()> {
    multi(None, jobs, x)
}

fn multi(pool: Option<&SpinPool>, jobs: &mut [MatvecJob<'_>], x: &[f32]) -> Result<()> {
    let n_in = x.len();
    // Quantized input per activation type (jobs usually share one).
    let mut acts: Vec<(GgmlType, Vec<u8>)> = Vec::new();
    for j in jobs.iter() {
        let act = j.kernels.act_type();
        check_len(
            "matmul weight bytes",
            mul(
                "matmul weight bytes (overflow)",
                j.out.len(),
                row_size(j.kernels.weight_type(), n_in)?,
            )?,
            j.w.len(),
        )?;
        if !acts.iter().any(|(t, _)| *t == act) {
            let mut buf = vec![0u8; activation_row_size(act, n_in)?];
            if !buf.is_empty() {
                quantize_activation_into(act, x, &mut buf)?;
            }
            acts.push((act, buf));
        }
    }
    struct Task<'t> {
        kernels: &'t Kernels,
        w: &'t [u8],
        w_row: usize,
        act: &'t [u8],
        out: &'t mut [f32],
    }
    let work: usize = jobs.iter().map(|j| j.w.len()).sum();
    let mut tasks = Vec::new();
    for j in jobs.iter_mut() {
        let w_row = row_size(j.kernels.weight_type(), n_in)?;
        let act_type = j.kernels.act_type();
        let act = acts
            .iter()
            .find(|(t, _)| *t == act_type)
            .map(|(_, a)| a.as_slice())
            .unwrap_or(&[]);
        for (c, out) in j.out.chunks_mut(ROWS_PER_TASK).enumerate() {
            let r0 = c * ROWS_PER_TASK;
            tasks.push(Task {
                kernels: j.kernels,
                w: j.w.get(r0 * w_row..(r0 + out.len()) * w_row).unwrap_or(&[]),
                w_row,
                act,
                out,
            });
        }
    }
    let run = |t: &mut Task<'_>| {
        for (i, o) in t.out.iter_mut().enumerate() {
            let wr = t.w.get(i * t.w_row..(i + 1) * t.w_row).unwrap_or(&[]);
            *o = t.kernels.dot_unchecked(wr, t.act);
        }
    };
    match pool {
        // A team of one is the calling thread (not rayon's pool, which would take every core).
        Some(pool) if pool.size() == 1 => tasks.iter_mut().for_each(run),
        Some(pool) if work >= PARALLEL_MIN_WORK => {
            // Contiguous shares of about `work / n` weight bytes each.
            let n = pool.size();
            let mut shares: Vec<std::sync::Mutex<&mut [Task<'_>]>> = Vec::with_capacity(n);
            let mut rest: &mut [Task<'_>] = &mut tasks;
            let mut done = 0usize;
            for part in 0..n {
                let target = work * (part + 1) / n;
                let mut take = 0;
                let mut bytes = done;
                while take < rest.len() && (bytes < target || part == n - 1) {
                    bytes += rest[take].w.len();
                    take += 1;
                }
                let (head, tail) = rest.split_at_mut(take);
                shares.push(std::sync::Mutex::new(head));
                rest = tail;
                done = bytes;
            }
            pool.run(&|part, _| {
                let mut share = shares[part].lock().unwrap_or_else(|e| e.into_inner());
                share.iter_mut().for_each(run);
            });
        }
        _ if work >= PARALLEL_MIN_WORK => tasks.par_iter_mut().for_each(run),
        _ => tasks.iter_mut().for_each(run),
    }
    Ok(())
}
