//! Legacy 32-element formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: reference dequantization and
//! quantization, following ggml's `ggml-quants.c` operation by operation.

use crate::blocks::{Block, BlockQ40, BlockQ41, BlockQ50, BlockQ51, BlockQ80, QK32};
use crate::error::{check_len, Result};
use crate::float::{c_f32_to_i32, fp32_to_fp16};

/// Checks `n_elements == blocks * B::ELEMS`.
pub(crate) fn check_elems<B: Block>(
    what: &'static str,
    n_blocks: usize,
    n_elements: usize,
) -> Result<()> {
    check_len(what, n_blocks.saturating_mul(B::ELEMS), n_elements)
}

/// Output chunks of one block each, as fixed-size arrays.
pub(crate) fn out_chunks<const N: usize>(out: &mut [f32]) -> impl Iterator<Item = &mut [f32; N]> {
    out.chunks_exact_mut(N).filter_map(|c| c.try_into().ok())
}

/// Input chunks of one block each, as fixed-size arrays.
pub(crate) fn in_chunks<const N: usize>(src: &[f32]) -> impl Iterator<Item = &[f32; N]> {
    src.chunks_exact(N).filter_map(|c| c.try_into().ok())
}

/// `y = (q - 8) * d`.
pub fn dequantize_row_q40_ref(blocks: &[BlockQ40], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ40>("Q4_0 output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        for j in 0..QK32 / 2 {
            let x0 = i32::from(b.qs[j] & 0x0F) - 8;
            let x1 = i32::from(b.qs[j] >> 4) - 8;
            y[j] = x0 as f32 * d;
            y[j + QK32 / 2] = x1 as f32 * d;
        }
    }
    Ok(())
}

/// `y = q * d + m`.
pub fn dequantize_row_q41_ref(blocks: &[BlockQ41], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ41>("Q4_1 output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        let m = crate::float::f16_to_f32(u16::from_le_bytes(b.m));
        for j in 0..QK32 / 2 {
            let x0 = b.qs[j] & 0x0F;
            let x1 = b.qs[j] >> 4;
            y[j] = f32::from(x0) * d + m;
            y[j + QK32 / 2] = f32::from(x1) * d + m;
        }
    }
    Ok(())
}

/// `y = (q - 16) * d`, the fifth bit of element j is bit j of `qh`.
pub fn dequantize_row_q50_ref(blocks: &[BlockQ50], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ50>("Q5_0 output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        let qh = u32::from_le_bytes(b.qh);
        for j in 0..QK32 / 2 {
            let xh0 = (((qh >> j) << 4) & 0x10) as u8;
            let xh1 = ((qh >> (j + 12)) & 0x10) as u8;
            let x0 = i32::from((b.qs[j] & 0x0F) | xh0) - 16;
            let x1 = i32::from((b.qs[j] >> 4) | xh1) - 16;
            y[j] = x0 as f32 * d;
            y[j + QK32 / 2] = x1 as f32 * d;
        }
    }
    Ok(())
}

/// `y = q * d + m` with 5-bit `q`.
pub fn dequantize_row_q51_ref(blocks: &[BlockQ51], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ51>("Q5_1 output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        let m = crate::float::f16_to_f32(u16::from_le_bytes(b.m));
        let qh = u32::from_le_bytes(b.qh);
        for j in 0..QK32 / 2 {
            let xh0 = (((qh >> j) << 4) & 0x10) as u8;
            let xh1 = ((qh >> (j + 12)) & 0x10) as u8;
            let x0 = (b.qs[j] & 0x0F) | xh0;
            let x1 = (b.qs[j] >> 4) | xh1;
            y[j] = f32::from(x0) * d + m;
            y[j + QK32 / 2] = f32::from(x1) * d + m;
        }
    }
    Ok(())
}

/// `y = q * d`.
pub fn dequantize_row_q80_ref(blocks: &[BlockQ80], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockQ80>("Q8_0 output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        for (y, q) in y.iter_mut().zip(b.qs) {
            *y = f32::from(q) * d;
        }
    }
    Ok(())
}

/// The element of largest magnitude (first one on ties), as ggml's Q4_0/Q5_0 search.
fn signed_absmax(x: &[f32; QK32]) -> f32 {
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

/// Minimum and maximum with ggml's `<`/`>` updates from `FLT_MAX`/`-FLT_MAX`.
fn min_max(x: &[f32; QK32]) -> (f32, f32) {
    let mut min = f32::MAX;
    let mut max = -f32::MAX;
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

/// `1/d`, or 0 when `d == 0`.
#[inline]
fn inverse(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// ggml's `quantize_row_q4_0_ref`: `d = max / -8`, `q = min(15, (int8)(x/d + 8.5))`.
pub fn quantize_row_q40_ref(src: &[f32], blocks: &mut [BlockQ40]) -> Result<()> {
    check_elems::<BlockQ40>("Q4_0 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let d = signed_absmax(x) / -8.0;
        let id = inverse(d);
        b.d = fp32_to_fp16(d).to_le_bytes();
        for j in 0..QK32 / 2 {
            let xi0 = (c_f32_to_i32(x[j] * id + 8.5) as i8 as i32).min(15) as u8;
            let xi1 = (c_f32_to_i32(x[j + QK32 / 2] * id + 8.5) as i8 as i32).min(15) as u8;
            b.qs[j] = xi0 | (xi1 << 4);
        }
    }
    Ok(())
}

/// ggml's `quantize_row_q4_1_ref`: `d = (max - min) / 15`, `q = min(15, (int8)((x-min)/d + 0.5))`.
pub fn quantize_row_q41_ref(src: &[f32], blocks: &mut [BlockQ41]) -> Result<()> {
    check_elems::<BlockQ41>("Q4_1 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inverse(d);
        b.d = fp32_to_fp16(d).to_le_bytes();
        b.m = fp32_to_fp16(min).to_le_bytes();
        for j in 0..QK32 / 2 {
            let x0 = (x[j] - min) * id;
            let x1 = (x[j + QK32 / 2] - min) * id;
            let xi0 = (c_f32_to_i32(x0 + 0.5) as i8 as i32).min(15) as u8;
            let xi1 = (c_f32_to_i32(x1 + 0.5) as i8 as i32).min(15) as u8;
            b.qs[j] = xi0 | (xi1 << 4);
        }
    }
    Ok(())
}

/// ggml's `quantize_row_q5_0_ref`: `d = max / -16`, `q = min(31, (int8)(x/d + 16.5))`.
pub fn quantize_row_q50_ref(src: &[f32], blocks: &mut [BlockQ50]) -> Result<()> {
    check_elems::<BlockQ50>("Q5_0 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let d = signed_absmax(x) / -16.0;
        let id = inverse(d);
        b.d = fp32_to_fp16(d).to_le_bytes();
        let mut qh = 0u32;
        for j in 0..QK32 / 2 {
            let xi0 = (c_f32_to_i32(x[j] * id + 16.5) as i8 as i32).min(31) as u8;
            let xi1 = (c_f32_to_i32(x[j + QK32 / 2] * id + 16.5) as i8 as i32).min(31) as u8;
            b.qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
            qh |= u32::from((xi0 & 0x10) >> 4) << j;
            qh |= u32::from((xi1 & 0x10) >> 4) << (j + QK32 / 2);
        }
        b.qh = qh.to_le_bytes();
    }
    Ok(())
}

/// ggml's `quantize_row_q5_1_ref`: `d = (max - min) / 31`, `q = (uint8)((x-min)/d + 0.5)`.
pub fn quantize_row_q51_ref(src: &[f32], blocks: &mut [BlockQ51]) -> Result<()> {
    check_elems::<BlockQ51>("Q5_1 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inverse(d);
        b.d = fp32_to_fp16(d).to_le_bytes();
        b.m = fp32_to_fp16(min).to_le_bytes();
        let mut qh = 0u32;
        for j in 0..QK32 / 2 {
            let x0 = (x[j] - min) * id;
            let x1 = (x[j + QK32 / 2] - min) * id;
            let xi0 = c_f32_to_i32(x0 + 0.5) as u8;
            let xi1 = c_f32_to_i32(x1 + 0.5) as u8;
            b.qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
            qh |= u32::from((xi0 & 0x10) >> 4) << j;
            qh |= u32::from((xi1 & 0x10) >> 4) << (j + QK32 / 2);
        }
        b.qh = qh.to_le_bytes();
    }
    Ok(())
}

/// ggml's `quantize_row_q8_0_ref`: `d = amax / 127`, `q = roundf(x / d)`.
pub fn quantize_row_q80_ref(src: &[f32], blocks: &mut [BlockQ80]) -> Result<()> {
    check_elems::<BlockQ80>("Q8_0 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let mut amax = 0.0f32;
        for &v in x {
            // ggml's MAX(a, b) macro: `a > b ? a : b` (a NaN element wins unless followed).
            let av = v.abs();
            amax = if amax > av { amax } else { av };
        }
        let d = amax / 127.0;
        let id = inverse(d);
        b.d = fp32_to_fp16(d).to_le_bytes();
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = c_f32_to_i32((v * id).round()) as i8;
        }
    }
    Ok(())
}
