//! Several products over the same multi-token input in one parallel region: the input is
//! quantized once per activation type, and every matrix's row chunks share one pool of tasks
//! (one synchronisation instead of one per matrix). Each output element is the same kernel
//! call [`crate::matmul_with`] makes, so the results are identical to separate products.

use std::sync::Mutex;

use muser_gguf::GgmlType;
use rayon::prelude::*;

use crate::api::row_size;
use crate::error::{check_len, Error, Result};
use crate::matmul::{PARALLEL_MIN_WORK, ROWS_PER_TASK};
use crate::q8::{activation_row_size, quantize_activation_into};
use crate::spin_pool::SpinPool;
use crate::vecdot::Kernels;

/// Tokens whose quantized rows a task keeps hot while its weight rows pass over them.
const TOKEN_BLOCK: usize = 32;

/// One matrix of [`matmul_batch`]: `out: [n_tokens, n_out]` = x · `w`ᵀ.
pub struct MatmulJob<'a> {
    pub kernels: &'a Kernels,
    /// `n_out` ggml rows of `n_in` elements.
    pub w: &'a [u8],
    pub n_out: usize,
    pub out: &'a mut [f32],
}

fn mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::Length {
        what: "matmul size (overflow)",
        expected: usize::MAX,
        actual: a,
    })
}

/// What a task reads: kernels, weights, weight row bytes, quantized input, its row bytes.
type View<'a> = (&'a Kernels, &'a [u8], usize, &'a [u8], usize);

/// Where [`matmul_batch_on`] runs its tasks.
#[derive(Clone, Copy)]
pub enum Threads<'a> {
    /// All on the calling thread (a caller that already spreads its own work over cores).
    Calling,
    /// On a spinning team (small, latency-bound products).
    Team(&'a SpinPool),
    /// On rayon's global pool.
    Rayon,
}

/// `x: [n_tokens, n_in]` times every job's matrix, on `pool` when given (else rayon).
pub fn matmul_batch(
    pool: Option<&SpinPool>,
    jobs: &mut [MatmulJob<'_>],
    x: &[f32],
    n_tokens: usize,
) -> Result<()> {
    let threads = pool.map_or(Threads::Rayon, Threads::Team);
    matmul_batch_on(threads, jobs, x, n_tokens)
}

/// [`matmul_batch`] on the given threads. Every result is the same whichever they are.
pub fn matmul_batch_on(
    threads: Threads<'_>,
    jobs: &mut [MatmulJob<'_>],
    x: &[f32],
    n_tokens: usize,
) -> Result<()> {
    if n_tokens == 0 || jobs.is_empty() {
        return Ok(());
    }
    // A team of one is the calling thread (not rayon's pool, which would take every core).
    let threads = match threads {
        Threads::Team(pool) if pool.size() == 1 => Threads::Calling,
        t => t,
    };
    let n_in = x.len() / n_tokens;
    check_len("matmul input length", mul(n_tokens, n_in)?, x.len())?;
    for j in jobs.iter() {
        let w_row = row_size(j.kernels.weight_type(), n_in)?;
        check_len("matmul weight bytes", mul(j.n_out, w_row)?, j.w.len())?;
        check_len("matmul output length", mul(n_tokens, j.n_out)?, j.out.len())?;
    }
    let work: usize = jobs
        .iter()
        .map(|j| j.w.len())
        .sum::<usize>()
        .saturating_mul(n_tokens);
    let in_parallel = work >= PARALLEL_MIN_WORK && !matches!(threads, Threads::Calling);
    let quantize_on = if in_parallel {
        threads
    } else {
        Threads::Calling
    };

    // Each token's row quantized once per activation type.
    let mut acts: Vec<(GgmlType, usize, Vec<u8>)> = Vec::new();
    for j in jobs.iter() {
        let ty = j.kernels.act_type();
        if acts.iter().any(|(t, _, _)| *t == ty) {
            continue;
        }
        let a_row = activation_row_size(ty, n_in)?;
        let mut buf = vec![0u8; mul(n_tokens, a_row)?];
        if a_row > 0 {
            quantize_rows(quantize_on, ty, x, n_in, a_row, &mut buf)?;
        }
        acts.push((ty, a_row, buf));
    }

    if !in_parallel {
        // One thread: straight into the outputs.
        for j in jobs.iter_mut() {
            let n_out = j.n_out;
            let v = view_of(j.kernels, j.w, n_out, &acts);
            let out = &mut *j.out;
            products(v, 0, n_out, n_tokens, |t, i, x| out[t * n_out + i] = x);
        }
        return Ok(());
    }

    // Tasks: (job, first row, rows); results token-major per task in one scratch buffer.
    let mut tasks = Vec::new();
    for (ji, j) in jobs.iter().enumerate() {
        for r0 in (0..j.n_out).step_by(ROWS_PER_TASK) {
            tasks.push((ji, r0, ROWS_PER_TASK.min(j.n_out - r0)));
        }
    }
    let total: usize = tasks.iter().map(|t| t.2).sum::<usize>() * n_tokens;
    let mut scratch = vec![0f32; total];
    let mut parts: Vec<Mutex<&mut [f32]>> = Vec::with_capacity(tasks.len());
    let mut rest: &mut [f32] = &mut scratch;
    for t in &tasks {
        let (head, tail) = rest.split_at_mut(t.2 * n_tokens);
        parts.push(Mutex::new(head));
        rest = tail;
    }
    let views: Vec<View<'_>> = jobs
        .iter()
        .map(|j| view_of(j.kernels, j.w, j.n_out, &acts))
        .collect();
    let run = |k: usize| {
        let (ji, r0, rows) = tasks[k];
        let mut dst = parts[k].lock().unwrap_or_else(|e| e.into_inner());
        products(views[ji], r0, rows, n_tokens, |t, i, v| {
            dst[t * rows + i] = v
        });
    };
    match threads {
        Threads::Team(pool) => pool.for_each(tasks.len(), &run),
        _ => (0..tasks.len()).into_par_iter().for_each(run),
    }
    drop(parts);

    // Contiguous copies: one run of `rows` values per token and task.
    let mut offset = 0;
    for &(ji, r0, rows) in &tasks {
        let part = &scratch[offset..offset + rows * n_tokens];
        offset += rows * n_tokens;
        let n_out = jobs[ji].n_out;
        for (t, src) in part.chunks_exact(rows).enumerate() {
            jobs[ji].out[t * n_out + r0..t * n_out + r0 + rows].copy_from_slice(src);
        }
    }
    Ok(())
}

/// What the products of one job read (its activation type's quantized rows among `acts`).
fn view_of<'v>(
    kernels: &'v Kernels,
    w: &'v [u8],
    n_out: usize,
    acts: &'v [(GgmlType, usize, Vec<u8>)],
) -> View<'v> {
    let ty = kernels.act_type();
    let (a_row, buf) = acts
        .iter()
        .find(|(t, _, _)| *t == ty)
        .map_or((0, &[][..]), |(_, a_row, buf)| (*a_row, buf.as_slice()));
    (kernels, w, w.len() / n_out.max(1), buf, a_row)
}

/// `put(t, i, dot(weight row r0 + i, token t))` for `rows` weight rows and every token.
fn products(
    (kernels, w, w_row, acts, a_row): View<'_>,
    r0: usize,
    rows: usize,
    n_tokens: usize,
    mut put: impl FnMut(usize, usize, f32),
) {
    let act = |t: usize| acts.get(t * a_row..(t + 1) * a_row).unwrap_or(&[]);
    // Tokens in blocks, so that a block's quantized rows stay in cache while every weight
    // row passes over them (512 prompt rows of Q8_K are ~1.2 MB per 2,048 inputs: re-reading
    // them from L3 for each weight row was the cost).
    for t0 in (0..n_tokens).step_by(TOKEN_BLOCK) {
        let t1 = (t0 + TOKEN_BLOCK).min(n_tokens);
        for i in 0..rows {
            let r = r0 + i;
            let wr = w.get(r * w_row..(r + 1) * w_row).unwrap_or(&[]);
            let mut t = t0;
            // Four tokens per pass where a four-row kernel exists (same bits per token).
            while t + 4 <= t1 {
                match kernels.dot4_unchecked(wr, [act(t), act(t + 1), act(t + 2), act(t + 3)]) {
                    Some(four) => {
                        for (q, v) in four.into_iter().enumerate() {
                            put(t + q, i, v);
                        }
                    }
                    None => break,
                }
                t += 4;
            }
            for q in t..t1 {
                put(q, i, kernels.dot_unchecked(wr, act(q)));
            }
        }
    }
}

/// `dst: [n_tokens, a_row]` = every `n_in`-wide row of `x` quantized to `ty`.
fn quantize_rows(
    threads: Threads<'_>,
    ty: GgmlType,
    x: &[f32],
    n_in: usize,
    a_row: usize,
    dst: &mut [u8],
) -> Result<()> {
    match threads {
        Threads::Calling => dst
            .chunks_mut(a_row)
            .zip(x.chunks(n_in.max(1)))
            .try_for_each(|(d, s)| quantize_activation_into(ty, s, d)),
        Threads::Team(pool) => {
            let rows: Vec<Mutex<&mut [u8]>> = dst.chunks_mut(a_row).map(Mutex::new).collect();
            let failed = Mutex::new(None);
            pool.for_each(rows.len(), &|t| {
                let mut d = rows[t].lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = quantize_activation_into(ty, &x[t * n_in..(t + 1) * n_in], &mut d) {
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                }
            });
            match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        Threads::Rayon => dst
            .par_chunks_mut(a_row)
            .zip(x.par_chunks(n_in.max(1)))
            .with_min_len(8)
            .try_for_each(|(d, s)| quantize_activation_into(ty, s, d)),
    }
}
