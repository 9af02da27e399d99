//! k-quant super-blocks Q2_K .. Q8_K: reference dequantization, in ggml's operation order.

use muser_gguf::QK_K;

use crate::blocks::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
use crate::error::Result;
use crate::float::f16_to_f32;
use crate::legacy::{check_elems, out_chunks};

/// Unpacks the 6-bit scale and min of sub-block `j` (0..8) of a Q4_K/Q5_K block
/// (ggml's `get_scale_min_k4`).
#[inline]
pub(crate) fn get_scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        let sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        let m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
        (sc, m)
    }
}

/// `y = d*sc * q - dmin*m` per 16-element sub-block, 2-bit quants.
pub fn dequantize_row_q2k_ref(blocks: &[BlockQ2K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ2K>("Q2_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        let min = f16_to_f32(u16::from_le_bytes(b.dmin));
        let mut is = 0;
        let mut o = 0;
        for n in (0..QK_K).step_by(128) {
            let q = &b.qs[n / 4..n / 4 + 32];
            for shift in [0, 2, 4, 6] {
                for half in [0, 16] {
                    let sc = b.scales[is];
                    is += 1;
                    let dl = d * f32::from(sc & 0xF);
                    let ml = min * f32::from(sc >> 4);
                    for l in 0..16 {
                        y[o] = dl * f32::from((q[l + half] >> shift) & 3) - ml;
                        o += 1;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Unpacks Q3_K's 16 6-bit scales, still offset by 32 (ggml's `auxs` shuffle).
#[inline]
pub(crate) fn q3k_scales(packed: &[u8; 12]) -> [i8; 16] {
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let word =
        |i: usize| u32::from_le_bytes([packed[i], packed[i + 1], packed[i + 2], packed[i + 3]]);
    let (a0, a1, tmp) = (word(0), word(4), word(8));
    let aux = [
        (a0 & KMASK2) | ((tmp & KMASK1) << 4),
        (a1 & KMASK2) | (((tmp >> 2) & KMASK1) << 4),
        ((a0 >> 4) & KMASK2) | (((tmp >> 4) & KMASK1) << 4),
        ((a1 >> 4) & KMASK2) | (((tmp >> 6) & KMASK1) << 4),
    ];
    let mut out = [0i8; 16];
    for (i, w) in aux.iter().enumerate() {
        for (k, byte) in w.to_le_bytes().into_iter().enumerate() {
            out[4 * i + k] = byte as i8;
        }
    }
    out
}

/// `y = d*(sc - 32) * (q - (hbit ? 0 : 4))` per 16-element sub-block.
pub fn dequantize_row_q3k_ref(blocks: &[BlockQ3K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ3K>("Q3_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d_all = b.d_f32();
        let scales = q3k_scales(&b.scales);
        let hm = &b.hmask;
        let mut m = 1u8;
        let mut is = 0;
        let mut o = 0;
        for n in (0..QK_K).step_by(128) {
            let q = &b.qs[n / 4..n / 4 + 32];
            for shift in [0, 2, 4, 6] {
                for half in [0, 16] {
                    let dl = d_all * (i32::from(scales[is]) - 32) as f32;
                    is += 1;
                    for l in 0..16 {
                        let low = i32::from((q[l + half] >> shift) & 3);
                        let high = if hm[l + half] & m != 0 { 0 } else { 4 };
                        y[o] = dl * (low - high) as f32;
                        o += 1;
                    }
                }
                m = m.wrapping_shl(1);
            }
        }
    }
    Ok(())
}

/// `y = d*sc * q - dmin*m` per 32-element sub-block, 4-bit quants.
pub fn dequantize_row_q4k_ref(blocks: &[BlockQ4K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ4K>("Q4_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        let min = f16_to_f32(u16::from_le_bytes(b.dmin));
        for (k, chunk) in y.chunks_exact_mut(64).enumerate() {
            let q = &b.qs[32 * k..32 * k + 32];
            let (sc, m) = get_scale_min_k4(2 * k, &b.scales);
            let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
            let (sc, m) = get_scale_min_k4(2 * k + 1, &b.scales);
            let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
            let (lo, hi) = chunk.split_at_mut(32);
            for l in 0..32 {
                lo[l] = d1 * f32::from(q[l] & 0xF) - m1;
                hi[l] = d2 * f32::from(q[l] >> 4) - m2;
            }
        }
    }
    Ok(())
}

/// As Q4_K with a fifth bit per element from `qh`.
pub fn dequantize_row_q5k_ref(blocks: &[BlockQ5K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ5K>("Q5_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        let min = f16_to_f32(u16::from_le_bytes(b.dmin));
        let mut u1 = 1u8;
        let mut u2 = 2u8;
        for (k, chunk) in y.chunks_exact_mut(64).enumerate() {
            let ql = &b.qs[32 * k..32 * k + 32];
            let (sc, m) = get_scale_min_k4(2 * k, &b.scales);
            let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
            let (sc, m) = get_scale_min_k4(2 * k + 1, &b.scales);
            let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
            let (lo, hi) = chunk.split_at_mut(32);
            for l in 0..32 {
                let h1 = if b.qh[l] & u1 != 0 { 16 } else { 0 };
                let h2 = if b.qh[l] & u2 != 0 { 16 } else { 0 };
                lo[l] = d1 * f32::from((ql[l] & 0xF) + h1) - m1;
                hi[l] = d2 * f32::from((ql[l] >> 4) + h2) - m2;
            }
            u1 = u1.wrapping_shl(2);
            u2 = u2.wrapping_shl(2);
        }
    }
    Ok(())
}

/// `y = (d*sc) * (q - 32)` per 16-element sub-block, 6-bit quants.
pub fn dequantize_row_q6k_ref(blocks: &[BlockQ6K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ6K>("Q6_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        for (half, y) in y.chunks_exact_mut(128).enumerate() {
            let ql = &b.ql[64 * half..64 * half + 64];
            let qh = &b.qh[32 * half..32 * half + 32];
            let sc = &b.scales[8 * half..8 * half + 8];
            for l in 0..32 {
                let is = l / 16;
                let q1 = i32::from((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
                let q2 = i32::from((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                let q3 = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                let q4 = i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * f32::from(sc[is]) * q1 as f32;
                y[l + 32] = d * f32::from(sc[is + 2]) * q2 as f32;
                y[l + 64] = d * f32::from(sc[is + 4]) * q3 as f32;
                y[l + 96] = d * f32::from(sc[is + 6]) * q4 as f32;
            }
        }
    }
    Ok(())
}

/// `y = d * q` with an f32 `d`.
pub fn dequantize_row_q8k_ref(blocks: &[BlockQ8K], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ8K>("Q8_K output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        for (y, q) in y.iter_mut().zip(b.qs) {
            *y = d * f32::from(q);
        }
    }
    Ok(())
}
