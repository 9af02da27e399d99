//! k-quant reference quantization (Q4_K, Q5_K, Q6_K, Q8_K): ggml's `quantize_row_*_ref`
//! algorithms, reproduced operation by operation so that the output bytes are identical.
//!
//! Allocation-free: all scratch lives on the stack, per super-block.

use muser_gguf::QK_K;

use crate::blocks::{BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
use crate::error::Result;
use crate::float::{f16_to_f32, fp32_to_fp16};
use crate::kquants::get_scale_min_k4;
use crate::legacy::{check_elems, in_chunks};
use crate::qkx2_lanes::{make_qkx2_quants_lanes, LANES, SUB};

/// ggml's `GROUP_MAX_EPS`: groups with a smaller absolute maximum are all zero.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: round half to even via the `1.5 * 2^23` magic constant.
///
/// Exact for |x| <= 4194303; beyond that (where ggml asserts in debug builds) it returns the
/// same wrapped bits as ggml's release build, and 0 for NaN.
#[inline(always)]
pub(crate) fn nearest_int(fval: f32) -> i32 {
    let val = fval + 12_582_912.0;
    ((val.to_bits() & 0x007f_ffff) as i32) - 0x0040_0000
}

/// ggml's `make_qkx2_quants`: asymmetric quantization of `N` values to `0..=nmax` with a
/// weighted least-squares search over `nstep + 1` candidate scales. Returns `(scale, -min)`.
///
/// This is the literal, readable port; production code runs [`make_qkx2_quants_lanes`] (the
/// same operations on 8 sub-blocks at once), and a test checks that both agree bit for bit.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants<const N: usize>(
    nmax: i32,
    x: &[f32; N],
    weights: &[f32; N],
    l_out: &mut [u8; N],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let mut laux = [0u8; N];
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..N {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l_out.fill(0);
        return (0.0, -min);
    }
    let nmax_f = nmax as f32;
    let mut iscale = nmax_f / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..N {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        l_out[i] = l as u8;
        let diff = scale * l as f32 + min - x[i];
        let diff = if use_mad { diff.abs() } else { diff * diff };
        best_error += weights[i] * diff;
    }
    if nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax_f) / (max - min);
        let mut sum_l = 0.0f32;
        let mut sum_l2 = 0.0f32;
        let mut sum_xl = 0.0f32;
        for i in 0..N {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            laux[i] = l as u8;
            let w = weights[i];
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..N {
                let diff = this_scale * f32::from(laux[i]) + this_min - x[i];
                let diff = if use_mad { diff.abs() } else { diff * diff };
                cur_error += weights[i] * diff;
            }
            if cur_error < best_error {
                *l_out = laux;
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// ggml's `make_qx_quants` with `rmse_type = 1` and no importance weights (weights `x^2`):
/// symmetric quantization of 16 values to `0..2*nmax` (offset by `nmax`). Returns the scale.
#[inline(always)]
fn make_qx_quants_rmse1(nmax: i32, x: &[f32; 16], l_out: &mut [i8; 16], search: bool) -> f32 {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out.fill(0);
        return 0.0;
    }
    let nmax_f = nmax as f32;
    let mut iscale = -nmax_f / max;
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for i in 0..16 {
        let l = nearest_int(iscale * x[i]).clamp(-nmax, nmax - 1);
        l_out[i] = (l + nmax) as i8;
        let w = x[i] * x[i];
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    if !search {
        return scale;
    }
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax_f + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &v in x {
            let lf = nearest_int(iscale * v).clamp(-nmax, nmax - 1) as f32;
            let w = v * v;
            sumlx += w * v * lf;
            suml2 += w * lf * lf;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for i in 0..16 {
                let l = nearest_int(iscale * x[i]).clamp(-nmax, nmax - 1);
                l_out[i] = (l + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// Shared body of Q4_K / Q5_K: per-sub-block scales and mins (6 bits each, packed as ggml
/// does), the f16 super-scales, and the final quants `L` (0..=nmax) for all 256 elements.
#[inline(always)]
fn quantize_q45k_common(
    x: &[f32; QK_K],
    nmax: i32,
    rmin: f32,
    nstep: i32,
    packed_scales: &mut [u8; 12],
) -> ([u8; 2], [u8; 2], [u8; QK_K]) {
    // Transpose: lane k = sub-block k (see qkx2_lanes).
    let mut xt = [[0.0f32; LANES]; SUB];
    for (k, xs) in x.chunks_exact(SUB).enumerate() {
        for (i, &v) in xs.iter().enumerate() {
            xt[i][k] = v;
        }
    }
    let mut sum_x2 = [0.0f32; LANES];
    for row in &xt {
        for k in 0..LANES {
            sum_x2[k] += row[k] * row[k];
        }
    }
    let mut av_x = [0.0f32; LANES];
    for k in 0..LANES {
        av_x[k] = (sum_x2[k] / 32.0).sqrt();
    }
    let mut wt = [[0.0f32; LANES]; SUB];
    for (w, row) in wt.iter_mut().zip(&xt) {
        for k in 0..LANES {
            w[k] = av_x[k] + row[k].abs();
        }
    }
    let mut lt = [[0u8; LANES]; SUB];
    let (scales, mins) = make_qkx2_quants_lanes(nmax, &xt, &wt, &mut lt, rmin, 0.1, nstep);
    let mut big_l = [0u8; QK_K];
    for (i, row) in lt.iter().enumerate() {
        for k in 0..LANES {
            big_l[SUB * k + i] = row[k];
        }
    }
    let mut max_scale = 0.0f32;
    let mut max_min = 0.0f32;
    for j in 0..QK_K / 32 {
        if scales[j] > max_scale {
            max_scale = scales[j];
        }
        if mins[j] > max_min {
            max_min = mins[j];
        }
    }

    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    for j in 0..QK_K / 32 {
        // ggml stores nearest_int's result in a uint8_t (wrapping) before clamping to 63.
        let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
        if j < 4 {
            packed_scales[j] = ls;
            packed_scales[j + 4] = lm;
        } else {
            packed_scales[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
            packed_scales[j - 4] |= (ls >> 4) << 6;
            packed_scales[j] |= (lm >> 4) << 6;
        }
    }
    let d = fp32_to_fp16(max_scale / 63.0);
    let dmin = fp32_to_fp16(max_min / 63.0);
    let (d_f, dmin_f) = (f16_to_f32(d), f16_to_f32(dmin));

    for j in 0..QK_K / 32 {
        let (sc, m) = get_scale_min_k4(j, packed_scales);
        let dj = d_f * f32::from(sc);
        if dj == 0.0 {
            continue;
        }
        let dm = dmin_f * f32::from(m);
        let xs: &[f32; 32] = sub(x, j);
        let lj: &mut [u8; 32] = sub_mut(&mut big_l, j);
        for (l, &v) in lj.iter_mut().zip(xs) {
            *l = nearest_int((v + dm) / dj).clamp(0, nmax) as u8;
        }
    }
    (d.to_le_bytes(), dmin.to_le_bytes(), big_l)
}

/// Sub-array `j` of length `M` (const-sized view; `j * M + M <= N` at every call site).
#[inline(always)]
fn sub<const N: usize, const M: usize, T>(a: &[T; N], j: usize) -> &[T; M] {
    let s = &a[j * M..j * M + M];
    s.try_into()
        .unwrap_or_else(|_| unreachable!("slice of length M"))
}

#[inline(always)]
fn sub_mut<const N: usize, const M: usize, T>(a: &mut [T; N], j: usize) -> &mut [T; M] {
    let s = &mut a[j * M..j * M + M];
    s.try_into()
        .unwrap_or_else(|_| unreachable!("slice of length M"))
}

/// ggml's `quantize_row_q4_K_ref` (`make_qkx2_quants(32, 15, .., -1, 0.1, 20)` per sub-block).
pub fn quantize_row_q4k_ref(src: &[f32], blocks: &mut [BlockQ4K]) -> Result<()> {
    quantize_row_q4k_nstep(src, blocks, 20)
}

/// ggml's Q4_K algorithm with the scale search off (`nstep = 0`): valid blocks from a single
/// min/max pass, several times faster, slightly larger error. For synthetic weights.
pub fn quantize_row_q4k_fast(src: &[f32], blocks: &mut [BlockQ4K]) -> Result<()> {
    quantize_row_q4k_nstep(src, blocks, 0)
}

fn quantize_row_q4k_nstep(src: &[f32], blocks: &mut [BlockQ4K], nstep: i32) -> Result<()> {
    check_elems::<BlockQ4K>("Q4_K input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK_K>(src).zip(blocks.iter_mut()) {
        let (d, dmin, big_l) = quantize_q45k_common(x, 15, -1.0, nstep, &mut b.scales);
        b.d = d;
        b.dmin = dmin;
        for (k, q) in b.qs.chunks_exact_mut(32).enumerate() {
            for l in 0..32 {
                q[l] = big_l[64 * k + l] | (big_l[64 * k + l + 32] << 4);
            }
        }
    }
    Ok(())
}

/// ggml's `quantize_row_q5_K_ref` (`make_qkx2_quants(32, 31, .., -0.5, 0.1, 15)`).
pub fn quantize_row_q5k_ref(src: &[f32], blocks: &mut [BlockQ5K]) -> Result<()> {
    quantize_row_q5k_nstep(src, blocks, 15)
}

/// ggml's Q5_K algorithm with the scale search off (`nstep = 0`); see [`quantize_row_q4k_fast`].
pub fn quantize_row_q5k_fast(src: &[f32], blocks: &mut [BlockQ5K]) -> Result<()> {
    quantize_row_q5k_nstep(src, blocks, 0)
}

fn quantize_row_q5k_nstep(src: &[f32], blocks: &mut [BlockQ5K], nstep: i32) -> Result<()> {
    check_elems::<BlockQ5K>("Q5_K input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK_K>(src).zip(blocks.iter_mut()) {
        let (d, dmin, big_l) = quantize_q45k_common(x, 31, -0.5, nstep, &mut b.scales);
        b.d = d;
        b.dmin = dmin;
        b.qh = [0; QK_K / 8];
        let (mut m1, mut m2) = (1u8, 2u8);
        for (k, ql) in b.qs.chunks_exact_mut(32).enumerate() {
            for j in 0..32 {
                let mut l1 = big_l[64 * k + j];
                if l1 > 15 {
                    l1 -= 16;
                    b.qh[j] |= m1;
                }
                let mut l2 = big_l[64 * k + j + 32];
                if l2 > 15 {
                    l2 -= 16;
                    b.qh[j] |= m2;
                }
                ql[j] = l1 | (l2 << 4);
            }
            m1 = m1.wrapping_shl(2);
            m2 = m2.wrapping_shl(2);
        }
    }
    Ok(())
}

/// ggml's `quantize_row_q6_K_ref` (`make_qx_quants(16, 32, .., rmse_type = 1)` per sub-block).
pub fn quantize_row_q6k_ref(src: &[f32], blocks: &mut [BlockQ6K]) -> Result<()> {
    quantize_row_q6k_search(src, blocks, true)
}

/// ggml's Q6_K algorithm without the 18-step scale search (the least-squares scale of the
/// first pass is kept); see [`quantize_row_q4k_fast`].
pub fn quantize_row_q6k_fast(src: &[f32], blocks: &mut [BlockQ6K]) -> Result<()> {
    quantize_row_q6k_search(src, blocks, false)
}

fn quantize_row_q6k_search(src: &[f32], blocks: &mut [BlockQ6K], search: bool) -> Result<()> {
    check_elems::<BlockQ6K>("Q6_K input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK_K>(src).zip(blocks.iter_mut()) {
        let mut big_l = [0i8; QK_K];
        let mut scales = [0.0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let mut max_abs_scale = 0.0f32;
        for (ib, s) in scales.iter_mut().enumerate() {
            let scale = make_qx_quants_rmse1(32, sub(x, ib), sub_mut(&mut big_l, ib), search);
            *s = scale;
            if scale.abs() > max_abs_scale {
                max_abs_scale = scale.abs();
                max_scale = scale;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            *b = <BlockQ6K as crate::blocks::Block>::ZERO;
            continue;
        }
        let iscale = -128.0 / max_scale;
        let d = fp32_to_fp16(1.0 / iscale);
        b.d = d.to_le_bytes();
        for (s, &scale) in b.scales.iter_mut().zip(&scales) {
            *s = nearest_int(iscale * scale).min(127) as i8;
        }
        let d_f = f16_to_f32(d);
        for j in 0..QK_K / 16 {
            let dj = d_f * f32::from(b.scales[j]);
            if dj == 0.0 {
                continue;
            }
            let xs: &[f32; 16] = sub(x, j);
            let lj: &mut [i8; 16] = sub_mut(&mut big_l, j);
            for (l, &v) in lj.iter_mut().zip(xs) {
                *l = (nearest_int(v / dj).clamp(-32, 31) + 32) as i8;
            }
        }
        let big_l = big_l.map(|v| v as u8);
        for half in 0..2 {
            let j = 128 * half;
            for l in 0..32 {
                let q1 = big_l[j + l] & 0xF;
                let q2 = big_l[j + l + 32] & 0xF;
                let q3 = big_l[j + l + 64] & 0xF;
                let q4 = big_l[j + l + 96] & 0xF;
                b.ql[64 * half + l] = q1 | (q3 << 4);
                b.ql[64 * half + l + 32] = q2 | (q4 << 4);
                b.qh[32 * half + l] = (big_l[j + l] >> 4)
                    | ((big_l[j + l + 32] >> 4) << 2)
                    | ((big_l[j + l + 64] >> 4) << 4)
                    | ((big_l[j + l + 96] >> 4) << 6);
            }
        }
    }
    Ok(())
}

/// ggml's `quantize_row_q8_K_ref`: `d = max / -127` (f32), `q = min(127, nearest_int(x / d))`,
/// plus the per-16 sums. An all-zero block gets `d = 0`, zero quants and (unlike ggml, which
/// leaves them untouched) zero sums.
pub fn quantize_row_q8k_ref(src: &[f32], blocks: &mut [BlockQ8K]) -> Result<()> {
    check_elems::<BlockQ8K>("Q8_K input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK_K>(src).zip(blocks.iter_mut()) {
        let mut max = 0.0f32;
        let mut amax = 0.0f32;
        for &v in x {
            let ax = v.abs();
            if ax > amax {
                amax = ax;
                max = v;
            }
        }
        if amax == 0.0 {
            *b = <BlockQ8K as crate::blocks::Block>::ZERO;
            continue;
        }
        let iscale = -127.0 / max;
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8;
        }
        for (j, sum) in b.bsums.iter_mut().enumerate() {
            let s: i32 = b.qs[16 * j..16 * j + 16]
                .iter()
                .map(|&q| i32::from(q))
                .sum();
            *sum = (s as i16).to_le_bytes();
        }
        b.d = (1.0 / iscale).to_le_bytes();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::nearest_int;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        assert_eq!(nearest_int(0.5), 0);
        assert_eq!(nearest_int(1.5), 2);
        assert_eq!(nearest_int(2.5), 2);
        assert_eq!(nearest_int(-0.5), 0);
        assert_eq!(nearest_int(-1.5), -2);
        assert_eq!(nearest_int(-3.7), -4);
        assert_eq!(nearest_int(4_194_303.0), 4_194_303);
        assert_eq!(nearest_int(f32::NAN), 0);
    }
}

#[cfg(test)]
mod lane_tests {
    use super::make_qkx2_quants;
    use crate::qkx2_lanes::{make_qkx2_quants_lanes, LANES, SUB};

    #[test]
    fn lanes_agree_with_the_scalar_reference() {
        let mut s = 0x1234_5678_9abc_def1u64;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for round in 0..200 {
            let mut xt = [[0.0f32; LANES]; SUB];
            let mut wt = [[0.0f32; LANES]; SUB];
            for i in 0..SUB {
                for k in 0..LANES {
                    let v = match (round + k) % 5 {
                        0 => 0.0,               // degenerate lane
                        1 => rnd().abs() + 0.2, // positive: min clamps to 0
                        _ => rnd() * 10f32.powi(k as i32 - 4),
                    };
                    xt[i][k] = v;
                    wt[i][k] = v.abs() + 0.01;
                }
            }
            for (nmax, rmin, nstep) in [(15, -1.0, 20), (31, -0.5, 15)] {
                let mut lt = [[0u8; LANES]; SUB];
                let (scale, min) =
                    make_qkx2_quants_lanes(nmax, &xt, &wt, &mut lt, rmin, 0.1, nstep);
                for k in 0..LANES {
                    let x: [f32; SUB] = std::array::from_fn(|i| xt[i][k]);
                    let w: [f32; SUB] = std::array::from_fn(|i| wt[i][k]);
                    let mut l = [0u8; SUB];
                    let (s1, m1) = make_qkx2_quants(nmax, &x, &w, &mut l, rmin, 0.1, nstep, false);
                    assert_eq!(s1.to_bits(), scale[k].to_bits(), "round {round} lane {k}");
                    assert_eq!(m1.to_bits(), min[k].to_bits(), "round {round} lane {k}");
                    let lk: [u8; SUB] = std::array::from_fn(|i| lt[i][k]);
                    assert_eq!(l, lk, "round {round} lane {k}");
                }
            }
        }
    }
}
