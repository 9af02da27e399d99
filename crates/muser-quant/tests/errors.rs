//! Error handling: wrong lengths, unsupported types, tensors named in errors, no panics on
//! arbitrary input.

use muser_gguf::TensorInfo;
use muser_quant::{
    can_dequantize, can_quantize, dequantize_row, dequantize_row_q6k_ref, dequantize_tensor,
    quantize_row, quantize_row_q8k_ref, Block, BlockQ6K, BlockQ8K, Error, GgmlType,
    DEQUANTIZE_TYPES,
};

fn info(name: &str, ty: GgmlType, dims: &[u64]) -> TensorInfo {
    TensorInfo {
        name: name.to_string(),
        dims: dims.to_vec(),
        ty,
        data_offset: 0,
        file_offset: 0,
        n_bytes: 0,
        info_offset: 0,
    }
}

#[test]
fn unsupported_tensor_type_names_tensor_and_type() {
    let t = info("blk.0.attn_q.weight", GgmlType::IQ2_XXS, &[256, 2]);
    let err = dequantize_tensor(&t, &[0u8; 132]).unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedType { tensor, ty: GgmlType::IQ2_XXS } if tensor == "blk.0.attn_q.weight")
    );
    let msg = err.to_string();
    assert!(msg.starts_with("tensor \"blk.0.attn_q.weight\": type IQ2_XXS is not supported (supported: F32, F16, Q4_0"), "{msg}");
    assert!(
        msg.contains("Q4_K") && msg.contains("IQ4_XS") && msg.contains("BF16"),
        "{msg}"
    );
}

#[test]
fn bad_tensor_length_names_the_tensor() {
    let t = info("output.weight", GgmlType::Q4_K, &[256, 3]);
    let err = dequantize_tensor(&t, &[0u8; 144 * 3 - 1]).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("tensor \"output.weight\"") && msg.contains("432") && msg.contains("431"),
        "{msg}"
    );

    // partial block
    let t = info("odd", GgmlType::Q8_0, &[33]);
    let msg = dequantize_tensor(&t, &[0u8; 34]).unwrap_err().to_string();
    assert!(msg.contains("tensor \"odd\""), "{msg}");

    // dims whose product overflows
    let t = info("huge", GgmlType::F32, &[u64::MAX, 4]);
    assert!(matches!(
        dequantize_tensor(&t, &[]),
        Err(Error::TensorLength { expected: None, .. })
    ));

    // a good one
    let t = info("ok", GgmlType::F16, &[2, 2]);
    let v = dequantize_tensor(&t, &[0, 0x3c, 0, 0xc0, 0, 0, 0, 0x80]).unwrap();
    assert_eq!(v, [1.0, -2.0, 0.0, -0.0]);
}

#[test]
fn row_functions_reject_wrong_lengths() {
    let mut out = vec![0.0f32; 256];
    assert!(matches!(
        dequantize_row(GgmlType::Q4_K, &[0u8; 143], &mut out),
        Err(Error::Length {
            expected: 144,
            actual: 143,
            ..
        })
    ));
    assert!(matches!(
        dequantize_row(GgmlType::Q4_K, &[0u8; 144], &mut out[..100]),
        Err(Error::PartialBlock {
            n_elements: 100,
            block_size: 256,
            ..
        })
    ));
    let mut bytes = vec![0u8; 210];
    assert!(quantize_row(GgmlType::Q6_K, &out, &mut bytes[..209]).is_err());
    assert!(quantize_row(GgmlType::Q6_K, &out[..255], &mut bytes).is_err());
    assert!(quantize_row(GgmlType::Q6_K, &out, &mut bytes).is_ok());

    // typed functions check too
    let blocks = [<BlockQ6K as Block>::ZERO; 2];
    assert!(dequantize_row_q6k_ref(&blocks, &mut out).is_err());
    let mut q8 = [<BlockQ8K as Block>::ZERO; 1];
    assert!(quantize_row_q8k_ref(&out[..128], &mut q8).is_err());
    assert!(quantize_row_q8k_ref(&out, &mut q8).is_ok());
}

#[test]
fn unsupported_row_types_are_errors() {
    let mut out = vec![0.0f32; 256];
    let err = dequantize_row(GgmlType::IQ2_XXS, &[0u8; 66], &mut out).unwrap_err();
    assert!(err.to_string().contains("IQ2_XXS"), "{err}");
    let err = quantize_row(GgmlType::Q2_K, &out, &mut [0u8; 84]).unwrap_err();
    assert!(
        err.to_string().contains("cannot quantize type Q2_K"),
        "{err}"
    );
    assert!(can_dequantize(GgmlType::Q3_K) && !can_quantize(GgmlType::Q3_K));
    assert!(!can_dequantize(GgmlType::Q8_1) && !can_dequantize(GgmlType::I32));
    assert!(can_quantize(GgmlType::Q5_K) && can_quantize(GgmlType::BF16));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut byte = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s as u8
    };
    let data: Vec<u8> = (0..4 * 292).map(|_| byte()).collect();
    for &ty in DEQUANTIZE_TYPES {
        for n in [0usize, 1, 31, 32, 255, 256, 512, 513] {
            for len in [0usize, 1, ty.type_size(), 2 * ty.type_size(), data.len()] {
                let mut out = vec![0.0f32; n];
                let _ = dequantize_row(ty, &data[..len], &mut out);
            }
        }
    }
    // NaN / inf inputs to every quantizer
    let x: Vec<f32> = (0..512)
        .map(|i| match i % 5 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => f32::MAX,
            _ => 1e-45,
        })
        .collect();
    for &ty in muser_quant::QUANTIZE_TYPES {
        let mut q = vec![0u8; muser_quant::row_size(ty, x.len()).unwrap()];
        quantize_row(ty, &x, &mut q).unwrap();
        let mut y = vec![0.0f32; x.len()];
        dequantize_row(ty, &q, &mut y).unwrap();
    }
}
