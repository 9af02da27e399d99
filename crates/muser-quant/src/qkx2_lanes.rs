//! ggml's `make_qkx2_quants`, run on the 8 sub-blocks of a super-block at once.
//!
//! Lane `k` holds sub-block `k`; every lane performs exactly ggml's sequence of f32 operations
//! (same order, same rounding), so results are bit-identical to the one-sub-block-at-a-time
//! reference (`kquant_quantize::make_qkx2_quants`, kept as the readable version and checked
//! against this one in tests). Running 8 independent dependency chains side by side lets the
//! CPU (and the auto-vectorizer) overlap them, which is several times faster.

/// Sub-blocks per super-block (lanes).
pub(crate) const LANES: usize = 8;
/// Elements per sub-block.
pub(crate) const SUB: usize = 32;

type V = [f32; LANES];

use crate::kquant_quantize::nearest_int;

/// For each lane `k`, quantizes `xt[..][k]` (weights `wt[..][k]`) to `0..=nmax`, writing the
/// quants to `lt[..][k]`; returns per-lane `(scale, -min)`. `use_mad = false` (squared error),
/// as Q4_K and Q5_K use it.
#[inline(always)]
pub(crate) fn make_qkx2_quants_lanes(
    nmax: i32,
    xt: &[V; SUB],
    wt: &[V; SUB],
    lt: &mut [[u8; LANES]; SUB],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
) -> (V, V) {
    let nmax_f = nmax as f32;
    let mut min = xt[0];
    let mut max = xt[0];
    let mut sum_w = wt[0];
    let mut sum_x = [0.0f32; LANES];
    for k in 0..LANES {
        sum_x[k] = sum_w[k] * xt[0][k];
    }
    for i in 1..SUB {
        for k in 0..LANES {
            let v = xt[i][k];
            min[k] = if v < min[k] { v } else { min[k] };
            max[k] = if v > max[k] { v } else { max[k] };
            sum_w[k] += wt[i][k];
            sum_x[k] += wt[i][k] * v;
        }
    }
    let mut degenerate = [false; LANES];
    let mut degenerate_min = [0.0f32; LANES];
    let mut iscale = [0.0f32; LANES];
    let mut scale = [0.0f32; LANES];
    for k in 0..LANES {
        if min[k] > 0.0 {
            min[k] = 0.0;
        }
        degenerate[k] = max[k] == min[k];
        degenerate_min[k] = -min[k];
        iscale[k] = nmax_f / (max[k] - min[k]);
        scale[k] = 1.0 / iscale[k];
    }

    let mut best_error = [0.0f32; LANES];
    for i in 0..SUB {
        for k in 0..LANES {
            let l = nearest_int(iscale[k] * (xt[i][k] - min[k])).clamp(0, nmax);
            lt[i][k] = l as u8;
            let diff = scale[k] * l as f32 + min[k] - xt[i][k];
            best_error[k] += wt[i][k] * (diff * diff);
        }
    }

    let mut laux = [[0u8; LANES]; SUB];
    for is in 0..=nstep {
        let num = rmin + rdelta * is as f32 + nmax_f;
        for k in 0..LANES {
            iscale[k] = num / (max[k] - min[k]);
        }
        let mut sum_l = [0.0f32; LANES];
        let mut sum_l2 = [0.0f32; LANES];
        let mut sum_xl = [0.0f32; LANES];
        for i in 0..SUB {
            for k in 0..LANES {
                let l = nearest_int(iscale[k] * (xt[i][k] - min[k])).clamp(0, nmax);
                laux[i][k] = l as u8;
                let w = wt[i][k];
                let lf = l as f32;
                sum_l[k] += w * lf;
                sum_l2[k] += w * lf * lf;
                sum_xl[k] += w * lf * xt[i][k];
            }
        }
        let mut this_scale = [0.0f32; LANES];
        let mut this_min = [0.0f32; LANES];
        let mut det_pos = [false; LANES];
        for k in 0..LANES {
            let det = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
            det_pos[k] = det > 0.0;
            let ts = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / det;
            let tm = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / det;
            let clamp = tm > 0.0;
            this_min[k] = if clamp { 0.0 } else { tm };
            this_scale[k] = if clamp { sum_xl[k] / sum_l2[k] } else { ts };
        }
        let mut cur_error = [0.0f32; LANES];
        for i in 0..SUB {
            for k in 0..LANES {
                let diff = this_scale[k] * f32::from(laux[i][k]) + this_min[k] - xt[i][k];
                cur_error[k] += wt[i][k] * (diff * diff);
            }
        }
        let mut update = [false; LANES];
        for k in 0..LANES {
            update[k] = det_pos[k] && cur_error[k] < best_error[k];
            if update[k] {
                best_error[k] = cur_error[k];
                scale[k] = this_scale[k];
                min[k] = this_min[k];
            }
        }
        if update.iter().any(|&u| u) {
            for i in 0..SUB {
                for k in 0..LANES {
                    if update[k] {
                        lt[i][k] = laux[i][k];
                    }
                }
            }
        }
    }

    let mut the_min = [0.0f32; LANES];
    for k in 0..LANES {
        if degenerate[k] {
            scale[k] = 0.0;
            the_min[k] = degenerate_min[k];
            for row in lt.iter_mut() {
                row[k] = 0;
            }
        } else {
            the_min[k] = -min[k];
        }
    }
    (scale, the_min)
}
