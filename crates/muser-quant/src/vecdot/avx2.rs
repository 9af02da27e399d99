//! AVX2 + FMA + F16C dot products, following ggml's x86 kernels (`ggml-cpu/arch/x86/quants.c`,
//! `vec.cpp`): integer products with `_mm256_maddubs_epi16` / `_mm256_madd_epi16`, one f32
//! FMA per block into 8-lane accumulators, a fixed horizontal sum at the end.
//!
//! Every function is `unsafe` only because it needs AVX2, FMA and F16C (callers check with
//! [`super::Isa::Avx2`]'s detection); memory is only read through in-bounds pointers of the
//! fixed-size block arrays, or within the checked lengths of the float rows.

use std::arch::x86_64::*;

use muser_gguf::QK_K;

use crate::blocks::{
    BlockIQ4NL, BlockIQ4XS, BlockQ40, BlockQ41, BlockQ4K, BlockQ50, BlockQ51, BlockQ5K, BlockQ6K,
    BlockQ80, BlockQ81, BlockQ8K,
};
use crate::iq4::KVALUES_IQ4NL;

/// f16 bits to f32 with F16C (exact, as `GGML_CPU_FP16_TO_FP32` on x86).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fp16(bits: [u8; 2]) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(
        u16::from_le_bytes(bits),
    ))))
}

/// 32 bytes from `p`.
///
/// # Safety
/// `p..p+32` must be readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load32(p: *const u8) -> __m256i {
    _mm256_loadu_si256(p.cast())
}

/// ggml's `hsum_float_8`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn hsum_float_8(x: __m256) -> f32 {
    let mut res = _mm256_extractf128_ps(x, 1);
    res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    res = _mm_add_ss(res, _mm_movehdup_ps(res));
    _mm_cvtss_f32(res)
}

/// Sum of the 4 i32 lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn hsum_i32_4(a: __m128i) -> i32 {
    let hi64 = _mm_unpackhi_epi64(a, a);
    let sum64 = _mm_add_epi32(hi64, a);
    let hi32 = _mm_shuffle_epi32(sum64, 0b10_11_00_01);
    _mm_cvtsi128_si32(_mm_add_epi32(sum64, hi32))
}

/// Unsigned × signed bytes, summed in pairs twice: 8 i32 lanes as f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mul_sum_us8_pairs_float(ax: __m256i, sy: __m256i) -> __m256 {
    let dot = _mm256_maddubs_epi16(ax, sy);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_set1_epi16(1), dot))
}

/// Signed × signed bytes (ggml's sign trick), summed in pairs twice, as f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mul_sum_i8_pairs_float(x: __m256i, y: __m256i) -> __m256 {
    mul_sum_us8_pairs_float(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
}

/// Signed × signed bytes, summed in pairs: 16 i16 lanes (ggml's `mul_add_epi8`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mul_add_epi8(x: __m256i, y: __m256i) -> __m256i {
    _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
}

/// 16 bytes of nibbles to 32 bytes: low nibbles first, then high nibbles.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bytes_from_nibbles_32(qs: &[u8; 16]) -> __m256i {
    // SAFETY: `qs` is 16 readable bytes.
    let tmp = _mm_loadu_si128(qs.as_ptr().cast());
    let bytes = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
    _mm256_and_si256(_mm256_set1_epi8(0xF), bytes)
}

/// 32 bits to 32 bytes of 0x00 / 0xFF.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bytes_from_bits_32(bits: [u8; 4]) -> __m256i {
    let shuf = _mm256_set_epi64x(
        0x0303_0303_0303_0303,
        0x0202_0202_0202_0202,
        0x0101_0101_0101_0101,
        0,
    );
    let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(i32::from_le_bytes(bits)), shuf);
    let bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbf_dfef_f7fb_fdfe));
    _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1))
}

/// Q8_0 × Q8_0. Unlike ggml's single accumulator, even and odd blocks go to two
/// accumulators (added at the end): twice as fast here, still a fixed order.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q80_q80(x: &[BlockQ80], y: &[BlockQ80]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 2];
    for (k, (bx, by)) in x.iter().zip(y).enumerate() {
        let d = _mm256_set1_ps(fp16(bx.d) * fp16(by.d));
        // SAFETY: `qs` are 32-byte arrays.
        let qx = load32(bx.qs.as_ptr().cast());
        let qy = load32(by.qs.as_ptr().cast());
        acc[k & 1] = _mm256_fmadd_ps(d, mul_sum_i8_pairs_float(qx, qy), acc[k & 1]);
    }
    hsum_float_8(_mm256_add_ps(acc[0], acc[1]))
}

/// Q4_0 × Q8_0.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q40_q80(x: &[BlockQ40], y: &[BlockQ80]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    for (bx, by) in x.iter().zip(y) {
        let d = _mm256_set1_ps(fp16(bx.d) * fp16(by.d));
        let qx = _mm256_sub_epi8(bytes_from_nibbles_32(&bx.qs), _mm256_set1_epi8(8));
        // SAFETY: `qs` is a 32-byte array.
        let qy = load32(by.qs.as_ptr().cast());
        acc = _mm256_fmadd_ps(d, mul_sum_i8_pairs_float(qx, qy), acc);
    }
    hsum_float_8(acc)
}

/// Q5_0 × Q8_0.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q50_q80(x: &[BlockQ50], y: &[BlockQ80]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    for (bx, by) in x.iter().zip(y) {
        let d = _mm256_set1_ps(fp16(bx.d) * fp16(by.d));
        let hi = _mm256_andnot_si256(bytes_from_bits_32(bx.qh), _mm256_set1_epi8(0xF0u8 as i8));
        let qx = _mm256_or_si256(bytes_from_nibbles_32(&bx.qs), hi);
        // SAFETY: `qs` is a 32-byte array.
        let qy = load32(by.qs.as_ptr().cast());
        acc = _mm256_fmadd_ps(d, mul_sum_i8_pairs_float(qx, qy), acc);
    }
    hsum_float_8(acc)
}

/// Q4_1 × Q8_1.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q41_q81(x: &[BlockQ41], y: &[BlockQ81]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut summs = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        summs += fp16(bx.m) * fp16(by.s);
        let d0d1 = _mm256_mul_ps(_mm256_set1_ps(fp16(bx.d)), _mm256_set1_ps(fp16(by.d)));
        let qx = bytes_from_nibbles_32(&bx.qs);
        // SAFETY: `qs` is a 32-byte array.
        let qy = load32(by.qs.as_ptr().cast());
        acc = _mm256_fmadd_ps(d0d1, mul_sum_us8_pairs_float(qx, qy), acc);
    }
    hsum_float_8(acc) + summs
}

/// Q5_1 × Q8_1.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q51_q81(x: &[BlockQ51], y: &[BlockQ81]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut summs = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let dx = _mm256_set1_ps(fp16(bx.d));
        summs += fp16(bx.m) * fp16(by.s);
        let hi = _mm256_and_si256(bytes_from_bits_32(bx.qh), _mm256_set1_epi8(0x10));
        let qx = _mm256_or_si256(bytes_from_nibbles_32(&bx.qs), hi);
        let dy = _mm256_set1_ps(fp16(by.d));
        // SAFETY: `qs` is a 32-byte array.
        let qy = load32(by.qs.as_ptr().cast());
        let q = mul_sum_us8_pairs_float(qx, qy);
        acc = _mm256_fmadd_ps(q, _mm256_mul_ps(dx, dy), acc);
    }
    hsum_float_8(acc) + summs
}

/// The 32 IQ4_NL code values of 16 packed nibbles (low nibbles, then high).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn iq4_values(qs: *const u8) -> __m256i {
    // SAFETY: KVALUES_IQ4NL is 16 bytes; callers pass 16 readable bytes.
    let values = _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast());
    let m4b = _mm_set1_epi8(0x0f);
    let bits = _mm_loadu_si128(qs.cast());
    _mm256_set_m128i(
        _mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(bits, 4), m4b)),
        _mm_shuffle_epi8(values, _mm_and_si128(bits, m4b)),
    )
}

/// IQ4_NL × Q8_0 (two blocks per step into two accumulators, an odd last block scalar).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_iq4nl_q80(x: &[BlockIQ4NL], y: &[BlockQ80]) -> f32 {
    let nb = x.len().min(y.len());
    let (x, y) = (&x[..nb], &y[..nb]);
    let mone = _mm256_set1_epi16(1);
    let mut accum = [_mm256_setzero_ps(); 2];
    let pairs = nb / 2;
    for (xp, yp) in x.chunks_exact(2).zip(y.chunks_exact(2)) {
        for k in 0..2 {
            let q4 = iq4_values(xp[k].qs.as_ptr());
            // SAFETY: `qs` is a 32-byte array.
            let q8 = load32(yp[k].qs.as_ptr().cast());
            let p = _mm256_madd_epi16(mul_add_epi8(q4, q8), mone);
            let d = _mm256_set1_ps(fp16(yp[k].d) * fp16(xp[k].d));
            accum[k] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), accum[k]);
        }
    }
    let mut sumf = hsum_float_8(_mm256_add_ps(accum[0], accum[1]));
    if nb % 2 == 1 {
        sumf += super::legacy::vec_dot_iq4nl_q80_ref(&x[2 * pairs..], &y[2 * pairs..]);
    }
    sumf
}

/// IQ4_XS × Q8_K.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_iq4xs_q8k(x: &[BlockIQ4XS], y: &[BlockQ8K]) -> f32 {
    let mut accum = _mm256_setzero_ps();
    for (bx, by) in x.iter().zip(y) {
        let mut sh = u16::from_le_bytes(bx.scales_h);
        let mut sumi1 = _mm256_setzero_si256();
        let mut sumi2 = _mm256_setzero_si256();
        for ib in (0..QK_K / 32).step_by(2) {
            // SAFETY: ib < 8, so bytes 16*ib .. 16*ib+32 of the 128-byte `qs` and bytes
            // 32*ib .. 32*ib+64 of the 256-byte `qs` are in bounds.
            let q4b1 = iq4_values(bx.qs.as_ptr().add(16 * ib));
            let q4b2 = iq4_values(bx.qs.as_ptr().add(16 * ib + 16));
            let q8b1 = load32(by.qs.as_ptr().add(32 * ib).cast());
            let q8b2 = load32(by.qs.as_ptr().add(32 * ib + 32).cast());
            let p16_1 = mul_add_epi8(q4b1, q8b1);
            let p16_2 = mul_add_epi8(q4b2, q8b2);
            let sl = bx.scales_l[ib / 2];
            let ls1 = i16::from((sl & 0xf) | ((sh << 4) & 0x30) as u8) - 32;
            let ls2 = i16::from((sl >> 4) | ((sh << 2) & 0x30) as u8) - 32;
            sh >>= 4;
            sumi1 = _mm256_add_epi32(_mm256_madd_epi16(p16_1, _mm256_set1_epi16(ls1)), sumi1);
            sumi2 = _mm256_add_epi32(_mm256_madd_epi16(p16_2, _mm256_set1_epi16(ls2)), sumi2);
        }
        let d = _mm256_set1_ps(fp16(bx.d) * by.d_f32());
        accum = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_add_epi32(sumi1, sumi2)), accum);
    }
    hsum_float_8(accum)
}

/// The (scales, mins) of a Q4_K/Q5_K block as 16 i16 lanes, scales first.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mins_and_scales(packed: &[u8; 12]) -> __m256i {
    // ggml's `utmp` shuffle: 8 6-bit scales in words 0-1, 8 6-bit mins in words 2-3.
    const KMASK1: u32 = 0x3f3f_3f3f;
    const KMASK2: u32 = 0x0f0f_0f0f;
    const KMASK3: u32 = 0x0303_0303;
    let word =
        |i: usize| u32::from_le_bytes([packed[i], packed[i + 1], packed[i + 2], packed[i + 3]]);
    let (u0, u1, u2) = (word(0), word(4), word(8));
    let utmp3 = ((u2 >> 4) & KMASK2) | (((u1 >> 6) & KMASK3) << 4);
    let utmp2 = u1 & KMASK1;
    let utmp1 = (u2 & KMASK2) | (((u0 >> 6) & KMASK3) << 4);
    let utmp0 = u0 & KMASK1;
    _mm256_cvtepu8_epi16(_mm_set_epi32(
        utmp3 as i32,
        utmp2 as i32,
        utmp1 as i32,
        utmp0 as i32,
    ))
}

/// `sum_k mins[k] * (bsums[2k] + bsums[2k+1])` as 4 i32 lanes (pairs of mins).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mins_products(ms: __m256i, by: &BlockQ8K) -> __m128i {
    // SAFETY: `bsums` is 32 bytes.
    let q8sums = load32(by.bsums.as_ptr().cast());
    let q8s = _mm_hadd_epi16(
        _mm256_extracti128_si256(q8sums, 0),
        _mm256_extracti128_si256(q8sums, 1),
    );
    _mm_madd_epi16(_mm256_extracti128_si256(ms, 1), q8s)
}

/// Q4_K × Q8_K.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q4k_q8k(x: &[BlockQ4K], y: &[BlockQ8K]) -> f32 {
    let m4 = _mm256_set1_epi8(0xF);
    let mut acc = _mm256_setzero_ps();
    let mut acc_m = _mm_setzero_ps();
    for (bx, by) in x.iter().zip(y) {
        let d = by.d_f32() * fp16(bx.d);
        let dmin = -by.d_f32() * fp16(bx.dmin);
        let ms = mins_and_scales(&bx.scales);
        let prod = mins_products(ms, by);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m);
        let sc128 = _mm256_extracti128_si256(ms, 0);
        let scales = _mm256_set_m128i(sc128, sc128);
        let mut sumi = _mm256_setzero_si256();
        for j in 0..QK_K / 64 {
            let scale_l = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j));
            let scale_h = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j + 1));
            // SAFETY: j < 4: bytes 32*j .. 32*j+32 of the 128-byte `qs`, 64*j .. 64*j+64 of
            // the 256-byte Q8_K `qs`.
            let q4bits = load32(bx.qs.as_ptr().add(32 * j));
            let q8l = load32(by.qs.as_ptr().add(64 * j).cast());
            let q8h = load32(by.qs.as_ptr().add(64 * j + 32).cast());
            let q4l = _mm256_and_si256(q4bits, m4);
            let q4h = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);
            let p16l = _mm256_madd_epi16(scale_l, _mm256_maddubs_epi16(q4l, q8l));
            let p16h = _mm256_madd_epi16(scale_h, _mm256_maddubs_epi16(q4h, q8h));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16l, p16h));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    hsum_float_8(acc) + _mm_cvtss_f32(acc_m)
}

/// Q4_K × Q8_K for four activation rows at once (prefill): the weight block is unpacked once
/// (nibbles, scale shuffles, mins) and used for all four, while each row's arithmetic is
/// exactly [`vec_dot_q4k_q8k`]'s, in the same order, so every result is bit-identical to the
/// one-row kernel (batch invariance).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q4k_q8k_x4(x: &[BlockQ4K], ys: [&[BlockQ8K]; 4]) -> [f32; 4] {
    let m4 = _mm256_set1_epi8(0xF);
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut acc_m = [_mm_setzero_ps(); 4];
    for (i, bx) in x.iter().enumerate() {
        let dx = fp16(bx.d);
        let dminx = fp16(bx.dmin);
        let ms = mins_and_scales(&bx.scales);
        let sc128 = _mm256_extracti128_si256(ms, 0);
        let scales = _mm256_set_m128i(sc128, sc128);
        let mut sumi = [_mm256_setzero_si256(); 4];
        for j in 0..QK_K / 64 {
            let scale_l = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j));
            let scale_h = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j + 1));
            // SAFETY: j < 4: bytes 32*j .. 32*j+32 of the 128-byte `qs`.
            let q4bits = load32(bx.qs.as_ptr().add(32 * j));
            let q4l = _mm256_and_si256(q4bits, m4);
            let q4h = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);
            for (t, y) in ys.iter().enumerate() {
                let by = &y[i];
                // SAFETY: 64*j .. 64*j+64 of the 256-byte Q8_K `qs`.
                let q8l = load32(by.qs.as_ptr().add(64 * j).cast());
                let q8h = load32(by.qs.as_ptr().add(64 * j + 32).cast());
                let p16l = _mm256_madd_epi16(scale_l, _mm256_maddubs_epi16(q4l, q8l));
                let p16h = _mm256_madd_epi16(scale_h, _mm256_maddubs_epi16(q4h, q8h));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p16l, p16h));
            }
        }
        for (t, y) in ys.iter().enumerate() {
            let by = &y[i];
            let d = by.d_f32() * dx;
            let dmin = -by.d_f32() * dminx;
            let prod = mins_products(ms, by);
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m[t]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    let mut out = [0f32; 4];
    for t in 0..4 {
        let mut m = acc_m[t];
        m = _mm_add_ps(m, _mm_movehl_ps(m, m));
        m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[t] = hsum_float_8(acc[t]) + _mm_cvtss_f32(m);
    }
    out
}

/// Byte shuffle broadcasting i16 lane `i` of a 128-bit half to all 16 lanes (both halves).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn scale_shuffle_k4(i: usize) -> __m256i {
    let lo = (2 * i) as i16;
    _mm256_set1_epi16(lo | ((lo + 1) << 8))
}

/// Q5_K × Q8_K.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q5k_q8k(x: &[BlockQ5K], y: &[BlockQ8K]) -> f32 {
    let m4 = _mm256_set1_epi8(0xF);
    let mut acc = _mm256_setzero_ps();
    let mut summs = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let d = by.d_f32() * fp16(bx.d);
        let dmin = -by.d_f32() * fp16(bx.dmin);
        let ms = mins_and_scales(&bx.scales);
        let prod = mins_products(ms, by);
        summs += dmin * hsum_i32_4(prod) as f32;
        let sc128 = _mm256_extracti128_si256(ms, 0);
        let scales = _mm256_set_m128i(sc128, sc128);
        // SAFETY: `qh` is a 32-byte array.
        let hbits = load32(bx.qh.as_ptr());
        let mut sumi = _mm256_setzero_si256();
        for j in 0..QK_K / 64 {
            let scale_0 = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j));
            let scale_1 = _mm256_shuffle_epi8(scales, scale_shuffle_k4(2 * j + 1));
            // SAFETY: j < 4, as in `vec_dot_q4k_q8k`.
            let q5bits = load32(bx.qs.as_ptr().add(32 * j));
            let q8_0 = load32(by.qs.as_ptr().add(64 * j).cast());
            let q8_1 = load32(by.qs.as_ptr().add(64 * j + 32).cast());
            let q5_0 = _mm256_add_epi8(_mm256_and_si256(q5bits, m4), high_bit(hbits, 2 * j));
            let q5l_1 = _mm256_and_si256(_mm256_srli_epi16(q5bits, 4), m4);
            let q5_1 = _mm256_add_epi8(q5l_1, high_bit(hbits, 2 * j + 1));
            let p16_0 = _mm256_madd_epi16(scale_0, _mm256_maddubs_epi16(q5_0, q8_0));
            let p16_1 = _mm256_madd_epi16(scale_1, _mm256_maddubs_epi16(q5_1, q8_1));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_0, p16_1));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    hsum_float_8(acc) + summs
}

/// 16 where bit `bit` of a `qh` byte is set, else 0.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn high_bit(hbits: __m256i, bit: usize) -> __m256i {
    let mask = _mm256_set1_epi8((1u8 << bit) as i8);
    let set = _mm256_cmpeq_epi8(_mm256_and_si256(hbits, mask), mask);
    _mm256_and_si256(set, _mm256_set1_epi8(16))
}

/// Q6_K × Q8_K.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q6k_q8k(x: &[BlockQ6K], y: &[BlockQ8K]) -> f32 {
    let m3 = _mm256_set1_epi8(3);
    let m15 = _mm256_set1_epi8(15);
    let mut acc = _mm256_setzero_ps();
    for (bx, by) in x.iter().zip(y) {
        let d = by.d_f32() * fp16(bx.d);
        // SAFETY: `bsums` is 32 bytes, `scales` 16 bytes.
        let q8sums = load32(by.bsums.as_ptr().cast());
        let scales = _mm_loadu_si128(bx.scales.as_ptr().cast());
        let q8sclsub =
            _mm256_slli_epi32(_mm256_madd_epi16(q8sums, _mm256_cvtepi8_epi16(scales)), 5);
        let sc = &bx.scales;
        let mut sumi = _mm256_setzero_si256();
        for j in 0..QK_K / 128 {
            // SAFETY: j < 2: bytes 64*j .. 64*j+64 of the 128-byte `ql`, 32*j .. 32*j+32 of
            // the 64-byte `qh`, 128*j .. 128*j+128 of the 256-byte Q8_K `qs`.
            let q4bits1 = load32(bx.ql.as_ptr().add(64 * j));
            let q4bits2 = load32(bx.ql.as_ptr().add(64 * j + 32));
            let q4bits_h = load32(bx.qh.as_ptr().add(32 * j));
            let q8p = by.qs.as_ptr().add(128 * j).cast::<u8>();
            let q8 = [
                load32(q8p),
                load32(q8p.add(32)),
                load32(q8p.add(64)),
                load32(q8p.add(96)),
            ];

            let q4h_0 = _mm256_slli_epi16(_mm256_and_si256(q4bits_h, m3), 4);
            let q4h_1 = _mm256_slli_epi16(_mm256_and_si256(q4bits_h, _mm256_set1_epi8(12)), 2);
            let q4h_2 = _mm256_and_si256(q4bits_h, _mm256_set1_epi8(48));
            let q4h_3 = _mm256_srli_epi16(_mm256_and_si256(q4bits_h, _mm256_set1_epi8(-64)), 2);
            let q4 = [
                _mm256_or_si256(_mm256_and_si256(q4bits1, m15), q4h_0),
                _mm256_or_si256(_mm256_and_si256(q4bits2, m15), q4h_1),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits1, 4), m15), q4h_2),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits2, 4), m15), q4h_3),
            ];
            let mut p = [_mm256_setzero_si256(); 4];
            for k in 0..4 {
                let is = 8 * j + 2 * k;
                let scale = _mm256_set_m128i(
                    _mm_set1_epi16(i16::from(sc[is + 1])),
                    _mm_set1_epi16(i16::from(sc[is])),
                );
                p[k] = _mm256_madd_epi16(scale, _mm256_maddubs_epi16(q4[k], q8[k]));
            }
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p[0], p[1]));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p[2], p[3]));
        }
        let sumi = _mm256_sub_epi32(sumi, q8sclsub);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    hsum_float_8(acc)
}

/// Q6_K × Q8_K for four activation rows at once, each bit-identical to [`vec_dot_q6k_q8k`]
/// (see [`vec_dot_q4k_q8k_x4`]).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q6k_q8k_x4(x: &[BlockQ6K], ys: [&[BlockQ8K]; 4]) -> [f32; 4] {
    let m3 = _mm256_set1_epi8(3);
    let m15 = _mm256_set1_epi8(15);
    let mut acc = [_mm256_setzero_ps(); 4];
    for (i, bx) in x.iter().enumerate() {
        let dx = fp16(bx.d);
        // SAFETY: `scales` is 16 bytes.
        let scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(bx.scales.as_ptr().cast()));
        let sc = &bx.scales;
        let mut sumi = [_mm256_setzero_si256(); 4];
        for j in 0..QK_K / 128 {
            // SAFETY: as in `vec_dot_q6k_q8k`.
            let q4bits1 = load32(bx.ql.as_ptr().add(64 * j));
            let q4bits2 = load32(bx.ql.as_ptr().add(64 * j + 32));
            let q4bits_h = load32(bx.qh.as_ptr().add(32 * j));
            let q4h_0 = _mm256_slli_epi16(_mm256_and_si256(q4bits_h, m3), 4);
            let q4h_1 = _mm256_slli_epi16(_mm256_and_si256(q4bits_h, _mm256_set1_epi8(12)), 2);
            let q4h_2 = _mm256_and_si256(q4bits_h, _mm256_set1_epi8(48));
            let q4h_3 = _mm256_srli_epi16(_mm256_and_si256(q4bits_h, _mm256_set1_epi8(-64)), 2);
            let q4 = [
                _mm256_or_si256(_mm256_and_si256(q4bits1, m15), q4h_0),
                _mm256_or_si256(_mm256_and_si256(q4bits2, m15), q4h_1),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits1, 4), m15), q4h_2),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits2, 4), m15), q4h_3),
            ];
            let mut scale = [_mm256_setzero_si256(); 4];
            for (k, s) in scale.iter_mut().enumerate() {
                let is = 8 * j + 2 * k;
                *s = _mm256_set_m128i(
                    _mm_set1_epi16(i16::from(sc[is + 1])),
                    _mm_set1_epi16(i16::from(sc[is])),
                );
            }
            for (t, y) in ys.iter().enumerate() {
                let q8p = y[i].qs.as_ptr().add(128 * j).cast::<u8>();
                let mut p = [_mm256_setzero_si256(); 4];
                for k in 0..4 {
                    let q8 = load32(q8p.add(32 * k));
                    p[k] = _mm256_madd_epi16(scale[k], _mm256_maddubs_epi16(q4[k], q8));
                }
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[0], p[1]));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[2], p[3]));
            }
        }
        for (t, y) in ys.iter().enumerate() {
            let by = &y[i];
            let d = by.d_f32() * dx;
            // SAFETY: `bsums` is 32 bytes.
            let q8sums = load32(by.bsums.as_ptr().cast());
            let q8sclsub = _mm256_slli_epi32(_mm256_madd_epi16(q8sums, scales16), 5);
            let s = _mm256_sub_epi32(sumi[t], q8sclsub);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
    [
        hsum_float_8(acc[0]),
        hsum_float_8(acc[1]),
        hsum_float_8(acc[2]),
        hsum_float_8(acc[3]),
    ]
}

/// ggml's `GGML_F32x8_REDUCE` of 4 accumulators.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn reduce4(mut s: [__m256; 4]) -> f32 {
    s[0] = _mm256_add_ps(s[0], s[2]);
    s[1] = _mm256_add_ps(s[1], s[3]);
    s[0] = _mm256_add_ps(s[0], s[1]);
    let t0 = _mm_add_ps(_mm256_castps256_ps128(s[0]), _mm256_extractf128_ps(s[0], 1));
    let t1 = _mm_hadd_ps(t0, t0);
    _mm_cvtss_f32(_mm_hadd_ps(t1, t1))
}

/// F32 × F32 over little-endian f32 bytes: 4 FMA accumulators over steps of 32, an f32 tail.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_f32(x: &[u8], y: &[u8]) -> f32 {
    let n = x.len().min(y.len()) / 4;
    let np = n & !31;
    let (px, py) = (x.as_ptr().cast::<f32>(), y.as_ptr().cast::<f32>());
    let mut sum = [_mm256_setzero_ps(); 4];
    for i in (0..np).step_by(32) {
        for (j, s) in sum.iter_mut().enumerate() {
            // SAFETY: i + 8*j + 8 <= np <= n elements of 4 readable bytes each.
            let ax = _mm256_loadu_ps(px.add(i + 8 * j));
            let ay = _mm256_loadu_ps(py.add(i + 8 * j));
            *s = _mm256_fmadd_ps(ax, ay, *s);
        }
    }
    let mut sumf = reduce4(sum);
    for (a, b) in x[4 * np..4 * n]
        .chunks_exact(4)
        .zip(y[4 * np..4 * n].chunks_exact(4))
    {
        sumf += f32::from_le_bytes([a[0], a[1], a[2], a[3]])
            * f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    sumf
}

/// F16 × F16 over little-endian f16 bytes: F16C widening, 4 FMA accumulators, an f64 tail.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_f16(x: &[u8], y: &[u8]) -> f32 {
    let n = x.len().min(y.len()) / 2;
    let np = n & !31;
    let mut sum = [_mm256_setzero_ps(); 4];
    for i in (0..np).step_by(32) {
        for (j, s) in sum.iter_mut().enumerate() {
            // SAFETY: elements i + 8*j .. +8 lie below np <= n (2 readable bytes each).
            let ax = _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr().add(2 * (i + 8 * j)).cast()));
            let ay = _mm256_cvtph_ps(_mm_loadu_si128(y.as_ptr().add(2 * (i + 8 * j)).cast()));
            *s = _mm256_fmadd_ps(ax, ay, *s);
        }
    }
    let mut sumf = f64::from(reduce4(sum));
    for (a, b) in x[2 * np..2 * n]
        .chunks_exact(2)
        .zip(y[2 * np..2 * n].chunks_exact(2))
    {
        sumf += f64::from(fp16([a[0], a[1]]) * fp16([b[0], b[1]]));
    }
    sumf as f32
}

/// 8 bf16 values widened to f32.
///
/// # Safety
/// `p..p+16` must be readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load_bf16x8(p: *const u8) -> __m256 {
    let v = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast()));
    _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))
}

/// BF16 × BF16 over little-endian bf16 bytes: 4 mul+add accumulators (ggml's AVX2 path has no
/// FMA here), an f64 tail.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_bf16(x: &[u8], y: &[u8]) -> f32 {
    let n = x.len().min(y.len()) / 2;
    let np = n & !31;
    let mut c = [_mm256_setzero_ps(); 4];
    for i in (0..np).step_by(32) {
        for (j, cj) in c.iter_mut().enumerate() {
            // SAFETY: elements i + 8*j .. +8 lie below np <= n.
            let a = load_bf16x8(x.as_ptr().add(2 * (i + 8 * j)));
            let b = load_bf16x8(y.as_ptr().add(2 * (i + 8 * j)));
            *cj = _mm256_add_ps(_mm256_mul_ps(a, b), *cj);
        }
    }
    let c1 = _mm256_add_ps(_mm256_add_ps(c[0], c[2]), _mm256_add_ps(c[1], c[3]));
    let mut sumf = f64::from(hsum_float_8(c1));
    for (a, b) in x[2 * np..2 * n]
        .chunks_exact(2)
        .zip(y[2 * np..2 * n].chunks_exact(2))
    {
        let fa = crate::float::bf16_to_f32(u16::from_le_bytes([a[0], a[1]]));
        let fb = crate::float::bf16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        sumf += f64::from(fa * fb);
    }
    sumf as f32
}
