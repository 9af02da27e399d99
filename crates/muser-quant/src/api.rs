//! Type-dispatched API: dequantize / quantize a row of any supported `GgmlType`, whole tensors.

use muser_gguf::{GgmlType, TensorInfo};

use crate::blocks::{cast_blocks, cast_blocks_mut, Block};
use crate::error::{check_len, Error, Result};
use crate::{float, iq4, kquant_quantize as kq, kquants, legacy};

/// Types [`dequantize_row`] handles, in ggml id order.
pub const DEQUANTIZE_TYPES: &[GgmlType] = &[
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
    GgmlType::Q8_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::BF16,
];

/// Types [`quantize_row`] handles, in ggml id order.
pub const QUANTIZE_TYPES: &[GgmlType] = &[
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_K,
    GgmlType::BF16,
];

/// Whether [`dequantize_row`] supports `ty`.
pub fn can_dequantize(ty: GgmlType) -> bool {
    DEQUANTIZE_TYPES.contains(&ty)
}

/// Whether [`quantize_row`] supports `ty`.
pub fn can_quantize(ty: GgmlType) -> bool {
    QUANTIZE_TYPES.contains(&ty)
}

fn names(types: &[GgmlType]) -> String {
    types
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Comma-separated names of the dequantizable types (for error messages).
pub fn supported_dequantize_names() -> String {
    names(DEQUANTIZE_TYPES)
}

/// Exact byte size of `n_elements` elements of `ty`; errors on a partial block or overflow.
pub fn row_size(ty: GgmlType, n_elements: usize) -> Result<usize> {
    let bs = ty.block_size();
    if bs == 0 || n_elements % bs != 0 {
        return Err(Error::PartialBlock {
            ty,
            n_elements,
            block_size: bs,
        });
    }
    (n_elements / bs)
        .checked_mul(ty.type_size())
        .ok_or(Error::Length {
            what: "row byte size (overflow)",
            expected: usize::MAX,
            actual: n_elements,
        })
}

fn deq<B: Block>(src: &[u8], dst: &mut [f32], f: fn(&[B], &mut [f32]) -> Result<()>) -> Result<()> {
    let blocks = cast_blocks::<B>(src).ok_or(Error::Length {
        what: "source bytes (whole blocks)",
        expected: src.len() - src.len() % B::TYPE.type_size(),
        actual: src.len(),
    })?;
    f(blocks, dst)
}

fn quant<B: Block>(
    src: &[f32],
    dst: &mut [u8],
    f: fn(&[f32], &mut [B]) -> Result<()>,
) -> Result<()> {
    let len = dst.len();
    let blocks = cast_blocks_mut::<B>(dst).ok_or(Error::Length {
        what: "destination bytes (whole blocks)",
        expected: len - len % B::TYPE.type_size(),
        actual: len,
    })?;
    f(src, blocks)
}

/// Dequantizes `dst.len()` elements of type `ty` from `src`, which must be exactly
/// `row_size(ty, dst.len())` bytes. Bit-identical to ggml's reference dequantization.
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<()> {
    if !can_dequantize(ty) {
        return Err(Error::UnsupportedOp {
            op: "dequantize",
            ty,
            supported: names(DEQUANTIZE_TYPES),
        });
    }
    check_len("source bytes", row_size(ty, dst.len())?, src.len())?;
    match ty {
        GgmlType::F32 => float::dequantize_row_f32_ref(src, dst),
        GgmlType::F16 => float::dequantize_row_f16_ref(src, dst),
        GgmlType::BF16 => float::dequantize_row_bf16_ref(src, dst),
        GgmlType::Q4_0 => deq(src, dst, legacy::dequantize_row_q40_ref),
        GgmlType::Q4_1 => deq(src, dst, legacy::dequantize_row_q41_ref),
        GgmlType::Q5_0 => deq(src, dst, legacy::dequantize_row_q50_ref),
        GgmlType::Q5_1 => deq(src, dst, legacy::dequantize_row_q51_ref),
        GgmlType::Q8_0 => deq(src, dst, legacy::dequantize_row_q80_ref),
        GgmlType::Q2_K => deq(src, dst, kquants::dequantize_row_q2k_ref),
        GgmlType::Q3_K => deq(src, dst, kquants::dequantize_row_q3k_ref),
        GgmlType::Q4_K => deq(src, dst, kquants::dequantize_row_q4k_ref),
        GgmlType::Q5_K => deq(src, dst, kquants::dequantize_row_q5k_ref),
        GgmlType::Q6_K => deq(src, dst, kquants::dequantize_row_q6k_ref),
        GgmlType::Q8_K => deq(src, dst, kquants::dequantize_row_q8k_ref),
        GgmlType::IQ4_NL => deq(src, dst, iq4::dequantize_row_iq4nl_ref),
        GgmlType::IQ4_XS => deq(src, dst, iq4::dequantize_row_iq4xs_ref),
        _ => Err(Error::UnsupportedOp {
            op: "dequantize",
            ty,
            supported: names(DEQUANTIZE_TYPES),
        }),
    }
}

/// Quantizes `src` to type `ty` into `dst`, which must be exactly `row_size(ty, src.len())`
/// bytes. Byte-identical to ggml's `quantize_row_*_ref` (no importance matrix).
pub fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<()> {
    if !can_quantize(ty) {
        return Err(Error::UnsupportedOp {
            op: "quantize",
            ty,
            supported: names(QUANTIZE_TYPES),
        });
    }
    check_len("destination bytes", row_size(ty, src.len())?, dst.len())?;
    match ty {
        GgmlType::F32 => float::quantize_row_f32_ref(src, dst),
        GgmlType::F16 => float::quantize_row_f16_ref(src, dst),
        GgmlType::BF16 => float::quantize_row_bf16_ref(src, dst),
        GgmlType::Q4_0 => quant(src, dst, legacy::quantize_row_q40_ref),
        GgmlType::Q4_1 => quant(src, dst, legacy::quantize_row_q41_ref),
        GgmlType::Q5_0 => quant(src, dst, legacy::quantize_row_q50_ref),
        GgmlType::Q5_1 => quant(src, dst, legacy::quantize_row_q51_ref),
        GgmlType::Q8_0 => quant(src, dst, legacy::quantize_row_q80_ref),
        GgmlType::Q4_K => quant(src, dst, kq::quantize_row_q4k_ref),
        GgmlType::Q5_K => quant(src, dst, kq::quantize_row_q5k_ref),
        GgmlType::Q6_K => quant(src, dst, kq::quantize_row_q6k_ref),
        GgmlType::Q8_K => quant(src, dst, kq::quantize_row_q8k_ref),
        _ => Err(Error::UnsupportedOp {
            op: "quantize",
            ty,
            supported: names(QUANTIZE_TYPES),
        }),
    }
}

/// Like [`quantize_row`], but the k-quants (Q4_K, Q5_K, Q6_K) skip ggml's scale search:
/// valid blocks, several times faster, slightly larger error. Other types are unchanged.
/// Meant for synthetic weights, where the quantization error does not matter.
pub fn quantize_row_fast(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<()> {
    match ty {
        GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => {
            check_len("destination bytes", row_size(ty, src.len())?, dst.len())?;
            match ty {
                GgmlType::Q4_K => quant(src, dst, kq::quantize_row_q4k_fast),
                GgmlType::Q5_K => quant(src, dst, kq::quantize_row_q5k_fast),
                _ => quant(src, dst, kq::quantize_row_q6k_fast),
            }
        }
        _ => quantize_row(ty, src, dst),
    }
}

/// Dequantizes a whole tensor (`bytes` = exactly its data) to f32, in ggml element order.
///
/// Errors name the tensor: [`Error::UnsupportedType`] for a type without a dequantizer,
/// [`Error::TensorLength`] when `bytes` does not match the type and dims.
pub fn dequantize_tensor(info: &TensorInfo, bytes: &[u8]) -> Result<Vec<f32>> {
    let ty = info.ty;
    if !can_dequantize(ty) {
        return Err(Error::UnsupportedType {
            tensor: info.name.clone(),
            ty,
        });
    }
    let n_elements = info
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let expected = n_elements.and_then(|n| ty.bytes_for(n));
    let length_error = || Error::TensorLength {
        tensor: info.name.clone(),
        ty,
        dims: info.dims.clone(),
        expected,
        actual: bytes.len(),
    };
    let (Some(n), Some(exp)) = (n_elements, expected) else {
        return Err(length_error());
    };
    if exp != bytes.len() as u64 {
        return Err(length_error());
    }
    let n = usize::try_from(n).map_err(|_| length_error())?;
    let mut out = vec![0.0f32; n];
    dequantize_row(ty, bytes, &mut out)?;
    Ok(out)
}
