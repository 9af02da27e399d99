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
use crate::q8::{activation_row_size, quantize_activation_into};
use crate::vecdot::Kernels;

/// Output rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// Below this many weight bytes × tokens, run on the calling thread.
const PARALLEL_MIN_WORK: usize = 1 << 16;

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
/// portable path).
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
    let a_row = activation_row_size(kernels.act_type(), n_in)?;
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

    // Quantize each token's activation once.
    let mut acts = vec![0u8; mul("activation bytes (overflow)", n_tokens, a_row)?];
    if a_row > 0 {
        let act = kernels.act_type();
        acts.par_chunks_mut(a_row)
            .zip(x.par_chunks(n_in.max(1)))
            .with_min_len(8)
            .try_for_each(|(dst, src)| quantize_activation_into(act, src, dst))?;
    }

    let parallel = w.len().saturating_mul(n_tokens) >= PARALLEL_MIN_WORK;
    // One task: output rows `r0 ..`, results in `dst[(r - r0) * n_tokens + t]`.
    let task = |(chunk, dst): (usize, &mut [f32])| {
        let r0 = chunk * ROWS_PER_TASK;
        for (i, per_row) in dst.chunks_mut(n_tokens).enumerate() {
            let r = r0 + i;
            let wr = w.get(r * w_row..(r + 1) * w_row).unwrap_or(&[]);
            for (t, o) in per_row.iter_mut().enumerate() {
                let ar = acts.get(t * a_row..(t + 1) * a_row).unwrap_or(&[]);
                *o = kernels.dot_unchecked(wr, ar);
            }
        }
    };

    if n_tokens == 1 {
        // `out` is already row-major by output row.
        run(out, ROWS_PER_TASK, parallel, task);
    } else {
        let mut by_row = vec![0.0f32; out.len()];
        run(
            &mut by_row,
            ROWS_PER_TASK.saturating_mul(n_tokens),
            parallel,
            task,
        );
        for (r, per_row) in by_row.chunks_exact(n_tokens).enumerate() {
            for (t, &v) in per_row.iter().enumerate() {
                out[t * n_out + r] = v;
            }
        }
    }
    Ok(())
}

fn run<F>(buf: &mut [f32], chunk: usize, parallel: bool, task: F)
where
    F: Fn((usize, &mut [f32])) + Sync + Send,
{
    if parallel {
        buf.par_chunks_mut(chunk).enumerate().for_each(task);
    } else {
        buf.chunks_mut(chunk).enumerate().for_each(task);
    }
}
