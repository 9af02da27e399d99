//! Round-trip sanity: quantize -> dequantize stays within a per-type error bound, and the
//! typed `_ref` functions agree with the generic API.

use muser_quant::{
    blocks_as_bytes, cast_blocks, dequantize_row, dequantize_row_q4k_ref, quantize_row,
    quantize_row_q4k_ref, row_size, Block, BlockQ4K, GgmlType, QUANTIZE_TYPES,
};

/// Deterministic pseudo-random values (xorshift), roughly N(0, 1) by summing uniforms.
fn gaussian(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| ((0..4).map(|_| next()).sum::<f64>() - 2.0) as f32 * 1.7)
        .collect()
}

fn relative_rmse(a: &[f32], b: &[f32]) -> f64 {
    let err: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let sig: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum();
    (err / sig).sqrt()
}

fn bound(ty: GgmlType) -> f64 {
    match ty {
        GgmlType::F32 => 0.0,
        GgmlType::F16 => 5e-4,
        GgmlType::BF16 => 4e-3,
        GgmlType::Q8_0 | GgmlType::Q8_K => 0.01,
        GgmlType::Q6_K => 0.02,
        GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q5_K => 0.05,
        GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q4_K => 0.1,
        _ => 0.0,
    }
}

#[test]
fn every_quantizable_type_round_trips_within_bounds() {
    let x = gaussian(16 * 256, 42);
    for &ty in QUANTIZE_TYPES {
        let mut q = vec![0u8; row_size(ty, x.len()).unwrap()];
        quantize_row(ty, &x, &mut q).unwrap();
        let mut y = vec![0.0f32; x.len()];
        dequantize_row(ty, &q, &mut y).unwrap();
        let e = relative_rmse(&x, &y);
        assert!(e <= bound(ty), "{ty}: relative rmse {e}");
        // zeros stay zeros
        let z = vec![0.0f32; 256];
        let mut q = vec![0xAAu8; row_size(ty, z.len()).unwrap()];
        quantize_row(ty, &z, &mut q).unwrap();
        let mut y = vec![1.0f32; z.len()];
        dequantize_row(ty, &q, &mut y).unwrap();
        assert!(y.iter().all(|&v| v == 0.0), "{ty}: zeros");
    }
}

#[test]
fn typed_functions_match_the_generic_api() {
    let x = gaussian(4 * 256, 7);
    let mut blocks = [<BlockQ4K as Block>::ZERO; 4];
    quantize_row_q4k_ref(&x, &mut blocks).unwrap();
    let mut bytes = vec![0u8; 4 * 144];
    quantize_row(GgmlType::Q4_K, &x, &mut bytes).unwrap();
    assert_eq!(blocks_as_bytes(&blocks), &bytes[..]);

    let mut a = vec![0.0f32; x.len()];
    dequantize_row_q4k_ref(cast_blocks::<BlockQ4K>(&bytes).unwrap(), &mut a).unwrap();
    let mut b = vec![0.0f32; x.len()];
    dequantize_row(GgmlType::Q4_K, &bytes, &mut b).unwrap();
    assert_eq!(a, b);

    // unaligned source bytes are fine
    let mut shifted = vec![0u8; 1];
    shifted.extend_from_slice(&bytes);
    dequantize_row(GgmlType::Q4_K, &shifted[1..], &mut b).unwrap();
    assert_eq!(a, b);
}

#[test]
fn quantizing_is_idempotent_on_the_grid() {
    // Values already on the Q8_0 grid survive a second round trip unchanged.
    let x = gaussian(1024, 9);
    let mut q = vec![0u8; row_size(GgmlType::Q8_0, x.len()).unwrap()];
    quantize_row(GgmlType::Q8_0, &x, &mut q).unwrap();
    let mut y = vec![0.0f32; x.len()];
    dequantize_row(GgmlType::Q8_0, &q, &mut y).unwrap();
    let mut q2 = vec![0u8; q.len()];
    quantize_row(GgmlType::Q8_0, &y, &mut q2).unwrap();
    let mut y2 = vec![0.0f32; x.len()];
    dequantize_row(GgmlType::Q8_0, &q2, &mut y2).unwrap();
    assert!(relative_rmse(&y, &y2) < 1e-3);
}

/// The search-free k-quant variants (used for synthetic weights) give valid blocks whose
/// error stays within 1.5x the reference bound, and never beat the reference.
#[test]
fn fast_kquants_are_valid_and_close_to_the_reference() {
    let x = gaussian(64 * 256, 11);
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
    ] {
        let n = row_size(ty, x.len()).unwrap();
        let (mut fast, mut reference) = (vec![0u8; n], vec![0u8; n]);
        muser_quant::quantize_row_fast(ty, &x, &mut fast).unwrap();
        quantize_row(ty, &x, &mut reference).unwrap();
        let (mut yf, mut yr) = (vec![0.0f32; x.len()], vec![0.0f32; x.len()]);
        dequantize_row(ty, &fast, &mut yf).unwrap();
        dequantize_row(ty, &reference, &mut yr).unwrap();
        let (ef, er) = (relative_rmse(&x, &yf), relative_rmse(&x, &yr));
        assert!(ef <= 1.5 * bound(ty), "{ty}: fast relative rmse {ef}");
        assert!(
            er <= ef + 1e-12,
            "{ty}: the reference ({er}) should not lose to fast ({ef})"
        );
        if ty == GgmlType::Q8_0 {
            assert_eq!(fast, reference);
        } else {
            assert_ne!(fast, reference, "{ty}: fast path skipped the search");
        }
    }
    let mut short = vec![0u8; 10];
    assert!(muser_quant::quantize_row_fast(GgmlType::Q4_K, &x, &mut short).is_err());
}
