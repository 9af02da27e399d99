//! Activation quantization for the CPU matmul: ggml's `vec_dot_type` pairing (which format a
//! weight type's dot product wants its activations in) and the row quantizers ggml's CPU
//! backend uses for them (`type_traits_cpu[..].from_float`).
//!
//! On x86 with AVX, ggml's CPU backend quantizes Q8_0 / Q8_1 activations with its own SIMD
//! routine, not with `quantize_row_q8_0_ref`: `id = 127 / amax` (not `1 / d`) and rounding
//! half to even (not `roundf`). [`quantize_row_q80_cpu`] / [`quantize_row_q81_cpu`] compute
//! exactly that, in portable scalar code, and are what [`quantize_activation`] uses on every
//! CPU, so the scalar and the SIMD matmul paths see the same activations. Q8_K uses ggml's
//! reference quantizer (as ggml's x86 backend does), F16 / BF16 round to nearest even.

use std::mem::size_of;

use muser_gguf::GgmlType;

use crate::api::row_size;
use crate::blocks::{cast_blocks_mut, Block, BlockQ80, BlockQ81, BlockQ8K, QK32};
use crate::error::{check_len, Error, Result};
use crate::float::{c_f32_to_i32, fp32_to_fp16};
use crate::legacy::{check_elems, in_chunks};

/// The activation type ggml pairs with `weight` in its CPU dot products, or `None` when this
/// crate has no dot product for `weight`.
pub fn vec_dot_type(weight: GgmlType) -> Option<GgmlType> {
    use GgmlType as T;
    Some(match weight {
        T::Q2_K | T::Q3_K | T::Q4_K | T::Q5_K | T::Q6_K | T::IQ4_XS => T::Q8_K,
        T::Q4_0 | T::Q5_0 | T::Q8_0 | T::IQ4_NL => T::Q8_0,
        T::Q4_1 | T::Q5_1 => T::Q8_1,
        T::F16 => T::F16,
        T::BF16 => T::BF16,
        T::F32 => T::F32,
        _ => return None,
    })
}

/// Weight types with a dot product (and so a matmul), in ggml id order.
pub const MATMUL_TYPES: &[GgmlType] = &[
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::BF16,
];

pub(crate) fn unsupported_matmul(ty: GgmlType) -> Error {
    Error::UnsupportedOp {
        op: "matmul",
        ty,
        supported: MATMUL_TYPES
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Bytes of `n` elements of activation type `act`. Q8_1 is 36 bytes per 32 (f16 `d` and
/// `s`, as ggml's `block_q8_1`), whatever the type table says.
pub fn activation_row_size(act: GgmlType, n: usize) -> Result<usize> {
    if act == GgmlType::Q8_1 {
        if n % QK32 != 0 {
            return Err(Error::PartialBlock {
                ty: act,
                n_elements: n,
                block_size: QK32,
            });
        }
        return Ok(n / QK32 * size_of::<BlockQ81>());
    }
    row_size(act, n)
}

/// Quantizes one activation row `x` to `vec_dot_type(weight_ty)`, replacing `out`'s contents.
pub fn quantize_activation(weight_ty: GgmlType, x: &[f32], out: &mut Vec<u8>) -> Result<()> {
    let act = vec_dot_type(weight_ty).ok_or_else(|| unsupported_matmul(weight_ty))?;
    out.clear();
    out.resize(activation_row_size(act, x.len())?, 0);
    quantize_activation_into(act, x, out)
}

/// Quantizes `x` to activation type `act` into `out` (exactly `activation_row_size` bytes).
pub(crate) fn quantize_activation_into(act: GgmlType, x: &[f32], out: &mut [u8]) -> Result<()> {
    check_len(
        "activation bytes",
        activation_row_size(act, x.len())?,
        out.len(),
    )?;
    match act {
        GgmlType::Q8_0 => quantize_row_q80_cpu(x, blocks_mut::<BlockQ80>(out)?),
        GgmlType::Q8_1 => quantize_row_q81_cpu(x, blocks_mut::<BlockQ81>(out)?),
        GgmlType::Q8_K => {
            crate::kquant_quantize::quantize_row_q8k_ref(x, blocks_mut::<BlockQ8K>(out)?)
        }
        GgmlType::F16 => crate::float::quantize_row_f16_ref(x, out),
        GgmlType::BF16 => crate::float::quantize_row_bf16_ref(x, out),
        GgmlType::F32 => crate::float::quantize_row_f32_ref(x, out),
        other => Err(unsupported_matmul(other)),
    }
}

fn blocks_mut<B: Block>(out: &mut [u8]) -> Result<&mut [B]> {
    let len = out.len();
    cast_blocks_mut::<B>(out).ok_or(Error::Length {
        what: "activation bytes (whole blocks)",
        expected: len - len % size_of::<B>(),
        actual: len,
    })
}

/// ggml's `MAX(a, b)`: `a > b ? a : b`.
#[inline]
fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `(amax, d, id, q)` of one 32-element block as ggml's x86 `quantize_row_q8_0/1`:
/// `d = amax / 127`, `id = 127 / amax`, `q = round_half_even(x * id)` saturated to i8
/// (`_mm256_cvtps_epi32` then two saturating packs). The i32 quants are returned unsaturated
/// too, for Q8_1's sum.
#[inline]
fn q8_block_cpu(x: &[f32; QK32]) -> (f32, [i8; QK32], i32) {
    let amax = x.iter().fold(0.0f32, |m, &v| c_max(m, v.abs()));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut q = [0i8; QK32];
    let mut sum = 0i32;
    for (q, &v) in q.iter_mut().zip(x) {
        let i = c_f32_to_i32((v * id).round_ties_even());
        sum = sum.wrapping_add(i);
        *q = i.clamp(-128, 127) as i8;
    }
    (d, q, sum)
}

/// Q8_0 as ggml's CPU backend quantizes activations on x86 (AVX/AVX2 `quantize_row_q8_0`).
pub fn quantize_row_q80_cpu(src: &[f32], blocks: &mut [BlockQ80]) -> Result<()> {
    check_elems::<BlockQ80>("Q8_0 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let (d, q, _) = q8_block_cpu(x);
        b.d = fp32_to_fp16(d).to_le_bytes();
        b.qs = q;
    }
    Ok(())
}

/// Q8_1 as ggml's CPU backend quantizes activations on x86 (AVX2 `quantize_row_q8_1`):
/// as [`quantize_row_q80_cpu`], plus `s = f16(d * sum(q))`.
pub fn quantize_row_q81_cpu(src: &[f32], blocks: &mut [BlockQ81]) -> Result<()> {
    check_elems::<BlockQ81>("Q8_1 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let (d, q, sum) = q8_block_cpu(x);
        b.d = fp32_to_fp16(d).to_le_bytes();
        b.s = fp32_to_fp16(d * sum as f32).to_le_bytes();
        b.qs = q;
    }
    Ok(())
}

/// ggml's `quantize_row_q8_1_ref`: `d = amax / 127`, `q = roundf(x / d)`, `s = f16(sum * d)`.
pub fn quantize_row_q81_ref(src: &[f32], blocks: &mut [BlockQ81]) -> Result<()> {
    check_elems::<BlockQ81>("Q8_1 input length", blocks.len(), src.len())?;
    for (x, b) in in_chunks::<QK32>(src).zip(blocks.iter_mut()) {
        let amax = x.iter().fold(0.0f32, |m, &v| c_max(m, v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        b.d = fp32_to_fp16(d).to_le_bytes();
        let mut sum = 0i32;
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = c_f32_to_i32((v * id).round()) as i8;
            sum += i32::from(*q);
        }
        b.s = fp32_to_fp16(sum as f32 * d).to_le_bytes();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q81_ref_matches_q80_ref_quants_and_sums() {
        let x: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 23) as f32 - 11.3) * 0.07)
            .collect();
        let mut b1 = [<BlockQ81 as Block>::ZERO; 2];
        let mut b0 = [<BlockQ80 as Block>::ZERO; 2];
        quantize_row_q81_ref(&x, &mut b1).unwrap();
        crate::legacy::quantize_row_q80_ref(&x, &mut b0).unwrap();
        for (a, b) in b1.iter().zip(&b0) {
            assert_eq!(a.d, b.d);
            assert_eq!(a.qs, b.qs);
            let sum: i32 = a.qs.iter().map(|&q| i32::from(q)).sum();
            let d = b.d_f32();
            let s = crate::float::f16_to_f32(u16::from_le_bytes(a.s));
            assert!((s - sum as f32 * d).abs() <= (sum as f32 * d).abs() * 1e-3 + 1e-6);
        }
    }

    #[test]
    fn cpu_variant_rounds_half_to_even_and_stays_close_to_ref() {
        // amax 127 gives id = 1: 2.5 rounds to 2 (ref: roundf gives 3).
        let mut x = [0.0f32; QK32];
        x[0] = 127.0;
        x[1] = 2.5;
        x[2] = -3.5;
        let mut b = [<BlockQ80 as Block>::ZERO];
        quantize_row_q80_cpu(&x, &mut b).unwrap();
        assert_eq!(&b[0].qs[..3], &[127, 2, -4]);
        let mut r = [<BlockQ80 as Block>::ZERO];
        crate::legacy::quantize_row_q80_ref(&x, &mut r).unwrap();
        assert_eq!(&r[0].qs[..3], &[127, 3, -4]);
        assert_eq!(b[0].d, r[0].d);
    }

    #[test]
    fn pairing_and_sizes() {
        assert_eq!(vec_dot_type(GgmlType::Q4_K), Some(GgmlType::Q8_K));
        assert_eq!(vec_dot_type(GgmlType::Q5_1), Some(GgmlType::Q8_1));
        assert_eq!(vec_dot_type(GgmlType::Q8_K), None);
        assert_eq!(activation_row_size(GgmlType::Q8_1, 64).unwrap(), 72);
        let mut out = vec![1u8; 3];
        quantize_activation(GgmlType::Q4_1, &[0.5; 64], &mut out).unwrap();
        assert_eq!(out.len(), 72);
        assert!(quantize_activation(GgmlType::Q4_1, &[0.5; 40], &mut out).is_err());
    }
}
