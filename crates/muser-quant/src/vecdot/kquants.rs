//! Scalar dot products of the k-quants (Q2_K .. Q6_K) and IQ4_XS with Q8_K activations, in the
//! operation order of ggml's `ggml_vec_dot_*_q8_K_generic`.
//!
//! Q3_K .. Q6_K follow ggml's "8 lanes" formulation: integer sums per lane (`element % 8`) over
//! a super-block, then `sums[lane] += d * aux32[lane]` in f32, the lanes added at the end.

use muser_gguf::QK_K;

use crate::blocks::{BlockIQ4XS, BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
use crate::float::f16_to_f32;
use crate::iq4::KVALUES_IQ4NL;
use crate::kquants::get_scale_min_k4;

#[inline]
fn h(bits: [u8; 2]) -> f32 {
    f16_to_f32(u16::from_le_bytes(bits))
}

/// The 16 stored `bsums` of a Q8_K block.
#[inline]
pub(crate) fn bsums(b: &BlockQ8K) -> [i32; QK_K / 16] {
    b.bsums.map(|s| i32::from(i16::from_le_bytes(s)))
}

/// Unpacks Q4_K/Q5_K's 8 scales and 8 mins (ggml's `utmp` shuffle).
#[inline]
pub(crate) fn scales_mins_k4(packed: &[u8; 12]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    for j in 0..8 {
        (sc[j], m[j]) = get_scale_min_k4(j, packed);
    }
    (sc, m)
}

pub(crate) use crate::kquants::q3k_scales;

/// ggml's lane accumulation: `aux32[l % 8] += scale(group) * q8[l] * a[l]` over a super-block,
/// with `GROUP` elements sharing one scale.
#[inline]
fn lane_sums<const GROUP: usize>(
    a: &[i8; QK_K],
    q8: &[i8; QK_K],
    scale: impl Fn(usize) -> i32,
) -> [i32; 8] {
    let mut aux32 = [0i32; 8];
    for (g, (ag, qg)) in a
        .chunks_exact(GROUP)
        .zip(q8.chunks_exact(GROUP))
        .enumerate()
    {
        let s = scale(g);
        for (l, (&av, &qv)) in ag.iter().zip(qg).enumerate() {
            aux32[l % 8] += s * (i32::from(qv) * i32::from(av));
        }
    }
    aux32
}

/// `sums[l] += d * aux32[l]`.
#[inline]
fn add_lanes(sums: &mut [f32; 8], d: f32, aux32: &[i32; 8]) {
    for (s, &a) in sums.iter_mut().zip(aux32) {
        *s += d * a as f32;
    }
}

/// Q2_K × Q8_K: `sumf += dall * isum - dmin * summs` per super-block.
pub fn vec_dot_q2k_q8k_ref(x: &[BlockQ2K], y: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let sc = &bx.scales;
        let bs = bsums(by);
        let summs: i32 = (0..16).map(|j| bs[j] * i32::from(sc[j] >> 4)).sum();
        let dall = by.d_f32() * h(bx.d);
        let dmin = by.d_f32() * h(bx.dmin);
        let mut isum = 0i32;
        let mut is = 0;
        for k in 0..QK_K / 128 {
            let q2 = &bx.qs[32 * k..32 * k + 32];
            for j in 0..4 {
                let shift = 2 * j;
                let q8 = &by.qs[128 * k + 32 * j..128 * k + 32 * j + 32];
                for half in [0, 16] {
                    let d = i32::from(sc[is] & 0xF);
                    is += 1;
                    let isuml: i32 = (half..half + 16)
                        .map(|l| i32::from(q8[l]) * i32::from((q2[l] >> shift) & 3))
                        .sum();
                    isum += d * isuml;
                }
            }
        }
        sumf += dall * isum as f32 - dmin * summs as f32;
    }
    sumf
}

/// Q3_K × Q8_K, ggml's 8-lane order.
pub fn vec_dot_q3k_q8k_ref(x: &[BlockQ3K], y: &[BlockQ8K]) -> f32 {
    let mut sums = [0.0f32; 8];
    for (bx, by) in x.iter().zip(y) {
        let mut a = [0i8; QK_K];
        let mut m = 1u8;
        for (c, chunk) in a.chunks_exact_mut(32).enumerate() {
            let q3 = &bx.qs[32 * (c / 4)..32 * (c / 4) + 32];
            let shift = 2 * (c % 4);
            for (l, v) in chunk.iter_mut().enumerate() {
                let low = ((q3[l] >> shift) & 3) as i8;
                *v = low - if bx.hmask[l] & m != 0 { 0 } else { 4 };
            }
            m = m.wrapping_shl(1);
        }
        let scales = q3k_scales(&bx.scales);
        let aux32 = lane_sums::<16>(&a, &by.qs, |g| i32::from(scales[g]) - 32);
        add_lanes(&mut sums, h(bx.d) * by.d_f32(), &aux32);
    }
    sums.iter().fold(0.0f32, |acc, &s| acc + s)
}

/// The 4-bit (Q4_K) or 5-bit (Q5_K, `qh` given) quants of a super-block, in element order.
#[inline]
fn q45k_values(qs: &[u8; QK_K / 2], qh: Option<&[u8; QK_K / 8]>) -> [i8; QK_K] {
    let mut a = [0i8; QK_K];
    for (c, chunk) in a.chunks_exact_mut(32).enumerate() {
        let q4 = &qs[32 * (c / 2)..32 * (c / 2) + 32];
        let shift = 4 * (c % 2);
        for (l, v) in chunk.iter_mut().enumerate() {
            let high = qh.map_or(0, |hm| if hm[l] & (1 << c) != 0 { 16 } else { 0 });
            *v = ((q4[l] >> shift) & 0xF) as i8 + high;
        }
    }
    a
}

/// Shared body of Q4_K and Q5_K: lanes for the scales, `sumf -= dmin * sumi` for the mins.
fn q45k_dot<'a>(
    blocks: impl Iterator<Item = ([i8; QK_K], &'a [u8; 12], [u8; 2], [u8; 2], &'a BlockQ8K)>,
) -> f32 {
    let mut sums = [0.0f32; 8];
    let mut sumf = 0.0f32;
    for (a, packed, d, dmin, by) in blocks {
        let (scales, mins) = scales_mins_k4(packed);
        let bs = bsums(by);
        let sumi: i32 = (0..16).map(|j| bs[j] * i32::from(mins[j / 2])).sum();
        let aux32 = lane_sums::<32>(&a, &by.qs, |g| i32::from(scales[g]));
        add_lanes(&mut sums, h(d) * by.d_f32(), &aux32);
        let dmin = h(dmin) * by.d_f32();
        sumf -= dmin * sumi as f32;
    }
    sums.iter().fold(sumf, |acc, &s| acc + s)
}

/// Q4_K × Q8_K, ggml's 8-lane order.
pub fn vec_dot_q4k_q8k_ref(x: &[BlockQ4K], y: &[BlockQ8K]) -> f32 {
    q45k_dot(
        x.iter()
            .zip(y)
            .map(|(bx, by)| (q45k_values(&bx.qs, None), &bx.scales, bx.d, bx.dmin, by)),
    )
}

/// Q5_K × Q8_K, ggml's 8-lane order.
pub fn vec_dot_q5k_q8k_ref(x: &[BlockQ5K], y: &[BlockQ8K]) -> f32 {
    q45k_dot(x.iter().zip(y).map(|(bx, by)| {
        let a = q45k_values(&bx.qs, Some(&bx.qh));
        (a, &bx.scales, bx.d, bx.dmin, by)
    }))
}

/// Q6_K × Q8_K, ggml's 8-lane order.
pub fn vec_dot_q6k_q8k_ref(x: &[BlockQ6K], y: &[BlockQ8K]) -> f32 {
    let mut sums = [0.0f32; 8];
    for (bx, by) in x.iter().zip(y) {
        let mut a = [0i8; QK_K];
        for (half, a) in a.chunks_exact_mut(128).enumerate() {
            let ql = &bx.ql[64 * half..64 * half + 64];
            let qh = &bx.qh[32 * half..32 * half + 32];
            for l in 0..32 {
                a[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
                a[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                a[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                a[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            }
        }
        let aux32 = lane_sums::<16>(&a, &by.qs, |g| i32::from(bx.scales[g]));
        add_lanes(&mut sums, h(bx.d) * by.d_f32(), &aux32);
    }
    sums.iter().fold(0.0f32, |acc, &s| acc + s)
}

/// IQ4_XS × Q8_K: `sumf += d4d8 * (ls - 32) * (sumi1 + sumi2)` per 32-element sub-block.
pub fn vec_dot_iq4xs_q8k_ref(x: &[BlockIQ4XS], y: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let d4d8 = h(bx.d) * by.d_f32();
        let mut hbits = u16::from_le_bytes(bx.scales_h);
        for ib in (0..QK_K / 32).step_by(2) {
            let sl = bx.scales_l[ib / 2];
            let ls1 = (sl & 0xF) | ((hbits << 4) & 0x30) as u8;
            let ls2 = (sl >> 4) | ((hbits << 2) & 0x30) as u8;
            hbits >>= 4;
            for (k, ls) in [(ib, ls1), (ib + 1, ls2)] {
                let dl = d4d8 * (i32::from(ls) - 32) as f32;
                let qs = &bx.qs[16 * k..16 * k + 16];
                let q8 = &by.qs[32 * k..32 * k + 32];
                let (mut sumi1, mut sumi2) = (0i32, 0i32);
                for j in 0..16 {
                    sumi1 += i32::from(q8[j]) * i32::from(KVALUES_IQ4NL[usize::from(qs[j] & 0xF)]);
                    sumi2 +=
                        i32::from(q8[j + 16]) * i32::from(KVALUES_IQ4NL[usize::from(qs[j] >> 4)]);
                }
                sumf += dl * (sumi1 + sumi2) as f32;
            }
        }
    }
    sumf
}
