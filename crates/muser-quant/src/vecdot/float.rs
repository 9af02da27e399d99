//! Scalar dot products of float rows (F32, F16, BF16; little-endian bytes), as ggml's
//! non-SIMD `ggml_vec_dot_{f32,f16,bf16}`: each product rounded to f32, summed in f64
//! (`ggml_float`), the total rounded to f32.

use std::sync::OnceLock;

use crate::float::{bf16_to_f32, f16_to_f32};

/// All 65536 f16 values widened (ggml's `ggml_table_f32_f16`): the per-element conversion
/// of the scalar F16 dot product is a load instead of a bit-manipulation routine.
fn f16_table() -> &'static [f32] {
    static TABLE: OnceLock<Vec<f32>> = OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(f16_to_f32).collect())
}

#[inline]
fn dot_with(x: &[u8], y: &[u8], width: usize, widen: impl Fn(&[u8]) -> f32) -> f32 {
    let mut sumf = 0.0f64;
    for (a, b) in x.chunks_exact(width).zip(y.chunks_exact(width)) {
        sumf += f64::from(widen(a) * widen(b));
    }
    sumf as f32
}

/// F32 × F32 over little-endian f32 bytes.
pub fn vec_dot_f32_ref(x: &[u8], y: &[u8]) -> f32 {
    dot_with(x, y, 4, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// F16 × F16 over little-endian f16 bytes.
pub fn vec_dot_f16_ref(x: &[u8], y: &[u8]) -> f32 {
    let table = f16_table();
    dot_with(x, y, 2, |b| {
        let bits = usize::from(u16::from_le_bytes([b[0], b[1]]));
        table.get(bits).copied().unwrap_or(f32::NAN)
    })
}

/// BF16 × BF16 over little-endian bf16 bytes.
pub fn vec_dot_bf16_ref(x: &[u8], y: &[u8]) -> f32 {
    dot_with(x, y, 2, |b| bf16_to_f32(u16::from_le_bytes([b[0], b[1]])))
}
