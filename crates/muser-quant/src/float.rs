//! Scalar float formats: f16 and bf16 conversions exactly as ggml does them, and F32/F16/BF16 rows.

use crate::error::{check_len, Result};

/// f16 bits to f32 (exact; NaNs stay NaN, quieted).
#[inline]
pub fn f16_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

/// f32 to f16 bits as `ggml_compute_fp32_to_fp16`: round to nearest even, overflow to
/// infinity, every NaN becomes the quiet NaN `0x7E00` with the input's sign.
#[inline]
pub fn fp32_to_fp16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;

    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);

    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    let magnitude = if shl1_w > 0xFF00_0000 {
        0x7E00
    } else {
        nonsign
    };
    ((sign >> 16) | magnitude) as u16
}

/// bf16 bits to f32 (exact).
#[inline]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// f32 to bf16 bits as `ggml_compute_fp32_to_bf16`: round to nearest even, NaNs quieted
/// (bit 6 of the bf16 set), subnormals kept.
#[inline]
pub fn fp32_to_bf16(f: f32) -> u16 {
    let u = f.to_bits();
    if u & 0x7fff_ffff > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16
}

/// What a C cast `(int)f` compiles to on x86-64 (`cvttss2si`): truncation toward zero, and
/// `i32::MIN` for NaN or out-of-range values. ggml's reference quantizers rely on it.
#[inline]
pub(crate) fn c_f32_to_i32(f: f32) -> i32 {
    if !(-2_147_483_648.0..2_147_483_648.0).contains(&f) {
        i32::MIN
    } else {
        f as i32
    }
}

/// Copies little-endian f32 bytes to `out` (`src.len() == 4 * out.len()`).
pub fn dequantize_row_f32_ref(src: &[u8], out: &mut [f32]) -> Result<()> {
    check_len("F32 source bytes", out.len().saturating_mul(4), src.len())?;
    for (y, b) in out.iter_mut().zip(src.chunks_exact(4)) {
        *y = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(())
}

/// Widens little-endian f16 bytes to `out` (`src.len() == 2 * out.len()`).
pub fn dequantize_row_f16_ref(src: &[u8], out: &mut [f32]) -> Result<()> {
    check_len("F16 source bytes", out.len().saturating_mul(2), src.len())?;
    for (y, b) in out.iter_mut().zip(src.chunks_exact(2)) {
        *y = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
    }
    Ok(())
}

/// Widens little-endian bf16 bytes to `out` (`src.len() == 2 * out.len()`).
pub fn dequantize_row_bf16_ref(src: &[u8], out: &mut [f32]) -> Result<()> {
    check_len("BF16 source bytes", out.len().saturating_mul(2), src.len())?;
    for (y, b) in out.iter_mut().zip(src.chunks_exact(2)) {
        *y = bf16_to_f32(u16::from_le_bytes([b[0], b[1]]));
    }
    Ok(())
}

/// Writes `src` as little-endian f32 bytes (`dst.len() == 4 * src.len()`).
pub fn quantize_row_f32_ref(src: &[f32], dst: &mut [u8]) -> Result<()> {
    check_len(
        "F32 destination bytes",
        src.len().saturating_mul(4),
        dst.len(),
    )?;
    for (x, b) in src.iter().zip(dst.chunks_exact_mut(4)) {
        b.copy_from_slice(&x.to_le_bytes());
    }
    Ok(())
}

/// Rounds `src` to little-endian f16 bytes as ggml's `ggml_fp32_to_fp16_row`.
pub fn quantize_row_f16_ref(src: &[f32], dst: &mut [u8]) -> Result<()> {
    check_len(
        "F16 destination bytes",
        src.len().saturating_mul(2),
        dst.len(),
    )?;
    for (x, b) in src.iter().zip(dst.chunks_exact_mut(2)) {
        b.copy_from_slice(&fp32_to_fp16(*x).to_le_bytes());
    }
    Ok(())
}

/// Rounds `src` to little-endian bf16 bytes as ggml's `ggml_fp32_to_bf16_row_ref`.
pub fn quantize_row_bf16_ref(src: &[f32], dst: &mut [u8]) -> Result<()> {
    check_len(
        "BF16 destination bytes",
        src.len().saturating_mul(2),
        dst.len(),
    )?;
    for (x, b) in src.iter().zip(dst.chunks_exact_mut(2)) {
        b.copy_from_slice(&fp32_to_bf16(*x).to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_matches_half_except_nan() {
        // Every 4099th bit pattern plus the interesting edges.
        let edges = [
            0,
            0x8000_0000,
            0x3380_0000,
            0x3380_0001,
            0x477f_f000,
            0x477f_efff,
        ];
        for b in (0..=u32::MAX).step_by(4099).chain(edges) {
            let f = f32::from_bits(b);
            let ours = fp32_to_fp16(f);
            if f.is_nan() {
                assert_eq!(ours & 0x7fff, 0x7E00);
                assert_eq!(ours & 0x8000, ((b >> 16) & 0x8000) as u16);
            } else {
                assert_eq!(ours, half::f16::from_f32(f).to_bits(), "{b:#010x}");
            }
        }
    }

    #[test]
    fn f16_widening_is_exact() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert_eq!(h & 0x7c00, 0x7c00);
            } else {
                assert_eq!(fp32_to_fp16(f), h);
            }
        }
    }

    #[test]
    fn bf16_rounds_to_nearest_even_and_quiets_nan() {
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie, even stays
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82); // tie, odd rounds up
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(fp32_to_bf16(f32::from_bits(0x7f80_0001)), 0x7fc0); // sNaN quieted
        assert_eq!(fp32_to_bf16(f32::from_bits(0xff81_0000)), 0xffc1);
        assert_eq!(fp32_to_bf16(f32::INFINITY), 0x7f80);
        assert_eq!(fp32_to_bf16(f32::from_bits(0x7f7f_ffff)), 0x7f80); // rounds to inf
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
    }

    #[test]
    fn c_cast_semantics() {
        assert_eq!(c_f32_to_i32(8.99), 8);
        assert_eq!(c_f32_to_i32(-0.7), 0);
        assert_eq!(c_f32_to_i32(f32::NAN), i32::MIN);
        assert_eq!(c_f32_to_i32(3e9), i32::MIN);
        assert_eq!(c_f32_to_i32(-2_147_483_648.0), i32::MIN);
    }
}
