//! Scalar dot products of the 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) with
//! quantized activations, in the operation order of ggml's `ggml_vec_dot_*_generic`.
//!
//! Integer sums per block first, then one float update per block, as ggml writes it (no FMA
//! contraction: Rust never fuses `a * b + c`).

use crate::blocks::{BlockIQ4NL, BlockQ40, BlockQ41, BlockQ50, BlockQ51, BlockQ80, BlockQ81, QK32};
use crate::float::f16_to_f32;
use crate::iq4::KVALUES_IQ4NL;

#[inline]
fn h(bits: [u8; 2]) -> f32 {
    f16_to_f32(u16::from_le_bytes(bits))
}

/// Q4_0 × Q8_0: `sumf += sumi * dx * dy` per block.
pub fn vec_dot_q40_q80_ref(x: &[BlockQ40], y: &[BlockQ80]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let (mut sumi0, mut sumi1) = (0i32, 0i32);
        for j in 0..QK32 / 2 {
            let v0 = i32::from(bx.qs[j] & 0x0F) - 8;
            let v1 = i32::from(bx.qs[j] >> 4) - 8;
            sumi0 += v0 * i32::from(by.qs[j]);
            sumi1 += v1 * i32::from(by.qs[j + QK32 / 2]);
        }
        let sumi = sumi0 + sumi1;
        sumf += sumi as f32 * bx.d_f32() * by.d_f32();
    }
    sumf
}

/// Q4_1 × Q8_1: `sumf += (dx * dy) * sumi + mx * sy` per block.
pub fn vec_dot_q41_q81_ref(x: &[BlockQ41], y: &[BlockQ81]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let (mut sumi0, mut sumi1) = (0i32, 0i32);
        for j in 0..QK32 / 2 {
            sumi0 += i32::from(bx.qs[j] & 0x0F) * i32::from(by.qs[j]);
            sumi1 += i32::from(bx.qs[j] >> 4) * i32::from(by.qs[j + QK32 / 2]);
        }
        let sumi = sumi0 + sumi1;
        sumf += (bx.d_f32() * by.d_f32()) * sumi as f32 + h(bx.m) * h(by.s);
    }
    sumf
}

/// The 5-bit quants of a Q5_0/Q5_1 block, low nibbles and high bits combined.
#[inline]
fn q5_values(qs: &[u8; QK32 / 2], qh: [u8; 4]) -> [i32; QK32] {
    let qh = u32::from_le_bytes(qh);
    let mut v = [0i32; QK32];
    for j in 0..QK32 / 2 {
        let xh0 = (((qh >> j) << 4) & 0x10) as u8;
        let xh1 = ((qh >> (j + 12)) & 0x10) as u8;
        v[j] = i32::from((qs[j] & 0x0F) | xh0);
        v[j + QK32 / 2] = i32::from((qs[j] >> 4) | xh1);
    }
    v
}

/// Q5_0 × Q8_0: `sumf += (dx * dy) * sumi` per block.
pub fn vec_dot_q50_q80_ref(x: &[BlockQ50], y: &[BlockQ80]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let v = q5_values(&bx.qs, bx.qh);
        let (mut sumi0, mut sumi1) = (0i32, 0i32);
        for j in 0..QK32 / 2 {
            sumi0 += (v[j] - 16) * i32::from(by.qs[j]);
            sumi1 += (v[j + QK32 / 2] - 16) * i32::from(by.qs[j + QK32 / 2]);
        }
        let sumi = sumi0 + sumi1;
        sumf += (bx.d_f32() * by.d_f32()) * sumi as f32;
    }
    sumf
}

/// Q5_1 × Q8_1: `sumf += (dx * dy) * sumi + mx * sy` per block.
pub fn vec_dot_q51_q81_ref(x: &[BlockQ51], y: &[BlockQ81]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let v = q5_values(&bx.qs, bx.qh);
        let (mut sumi0, mut sumi1) = (0i32, 0i32);
        for j in 0..QK32 / 2 {
            sumi0 += v[j] * i32::from(by.qs[j]);
            sumi1 += v[j + QK32 / 2] * i32::from(by.qs[j + QK32 / 2]);
        }
        let sumi = sumi0 + sumi1;
        sumf += (bx.d_f32() * by.d_f32()) * sumi as f32 + h(bx.m) * h(by.s);
    }
    sumf
}

/// Q8_0 × Q8_0: `sumf += sumi * (dx * dy)` per block.
pub fn vec_dot_q80_q80_ref(x: &[BlockQ80], y: &[BlockQ80]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let sumi: i32 = bx
            .qs
            .iter()
            .zip(&by.qs)
            .map(|(&a, &b)| i32::from(a) * i32::from(b))
            .sum();
        sumf += sumi as f32 * (bx.d_f32() * by.d_f32());
    }
    sumf
}

/// IQ4_NL × Q8_0: `sumf += (dy * dx) * (sumi1 + sumi2)` per block.
pub fn vec_dot_iq4nl_q80_ref(x: &[BlockIQ4NL], y: &[BlockQ80]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let d = by.d_f32() * bx.d_f32();
        let (mut sumi1, mut sumi2) = (0i32, 0i32);
        for j in 0..QK32 / 2 {
            let lo = KVALUES_IQ4NL[usize::from(bx.qs[j] & 0xF)];
            let hi = KVALUES_IQ4NL[usize::from(bx.qs[j] >> 4)];
            sumi1 += i32::from(by.qs[j]) * i32::from(lo);
            sumi2 += i32::from(by.qs[j + QK32 / 2]) * i32::from(hi);
        }
        sumf += d * (sumi1 + sumi2) as f32;
    }
    sumf
}
