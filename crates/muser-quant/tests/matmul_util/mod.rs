//! Shared by the matmul tests and the matmul benchmark: a xorshift generator, random valid
//! weight rows of every matmul type (random quants, sane f16 scales, never all zero) and
//! random activations.

#![allow(dead_code)]

use muser_quant::{
    cast_blocks_mut, fp32_to_bf16, fp32_to_fp16, row_size, Block, BlockIQ4NL, BlockIQ4XS, BlockQ2K,
    BlockQ3K, BlockQ40, BlockQ41, BlockQ4K, BlockQ50, BlockQ51, BlockQ5K, BlockQ6K, BlockQ80,
    GgmlType,
};

/// xorshift64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform in ±[lo, hi).
    pub fn signed(&mut self, lo: f32, hi: f32) -> f32 {
        let v = self.range(lo, hi);
        if self.next_u64() & 1 == 0 {
            v
        } else {
            -v
        }
    }

    pub fn fill_bytes(&mut self, b: &mut [u8]) {
        for x in b {
            *x = (self.next_u64() >> 32) as u8;
        }
    }
}

fn h(v: f32) -> [u8; 2] {
    fp32_to_fp16(v).to_le_bytes()
}

fn patch<B: Block>(bytes: &mut [u8], mut f: impl FnMut(&mut B)) {
    for b in cast_blocks_mut::<B>(bytes).expect("whole blocks") {
        f(b);
    }
}

/// `n_rows` random rows of `n` elements of `ty`: random quant bits, f16 scales of either sign
/// (mins positive) sized so that weights are O(1).
pub fn random_weights(ty: GgmlType, n: usize, n_rows: usize, rng: &mut Rng) -> Vec<u8> {
    use GgmlType as T;
    let mut w = vec![0u8; row_size(ty, n).expect("whole blocks") * n_rows];
    match ty {
        T::F32 => {
            for c in w.chunks_exact_mut(4) {
                c.copy_from_slice(&rng.range(-1.0, 1.0).to_le_bytes());
            }
            return w;
        }
        T::F16 => {
            for c in w.chunks_exact_mut(2) {
                c.copy_from_slice(&fp32_to_fp16(rng.range(-1.0, 1.0)).to_le_bytes());
            }
            return w;
        }
        T::BF16 => {
            for c in w.chunks_exact_mut(2) {
                c.copy_from_slice(&fp32_to_bf16(rng.range(-1.0, 1.0)).to_le_bytes());
            }
            return w;
        }
        _ => {}
    }
    rng.fill_bytes(&mut w);
    match ty {
        T::Q4_0 => patch::<BlockQ40>(&mut w, |b| b.d = h(rng.signed(0.05, 0.2))),
        T::Q4_1 => patch::<BlockQ41>(&mut w, |b| {
            b.d = h(rng.range(0.05, 0.2));
            b.m = h(-rng.range(0.5, 1.5));
        }),
        T::Q5_0 => patch::<BlockQ50>(&mut w, |b| b.d = h(rng.signed(0.02, 0.1))),
        T::Q5_1 => patch::<BlockQ51>(&mut w, |b| {
            b.d = h(rng.range(0.02, 0.1));
            b.m = h(-rng.range(0.5, 1.5));
        }),
        T::Q8_0 => patch::<BlockQ80>(&mut w, |b| b.d = h(rng.signed(0.002, 0.01))),
        T::IQ4_NL => patch::<BlockIQ4NL>(&mut w, |b| b.d = h(rng.signed(0.002, 0.01))),
        T::Q2_K => patch::<BlockQ2K>(&mut w, |b| {
            b.d = h(rng.signed(0.02, 0.1));
            b.dmin = h(rng.range(0.02, 0.1));
        }),
        T::Q3_K => patch::<BlockQ3K>(&mut w, |b| b.d = h(rng.signed(0.002, 0.01))),
        T::Q4_K => patch::<BlockQ4K>(&mut w, |b| {
            b.d = h(rng.signed(0.001, 0.005));
            b.dmin = h(rng.range(0.001, 0.01));
        }),
        T::Q5_K => patch::<BlockQ5K>(&mut w, |b| {
            b.d = h(rng.signed(0.0005, 0.003));
            b.dmin = h(rng.range(0.001, 0.01));
        }),
        T::Q6_K => patch::<BlockQ6K>(&mut w, |b| b.d = h(rng.signed(0.0002, 0.001))),
        T::IQ4_XS => patch::<BlockIQ4XS>(&mut w, |b| b.d = h(rng.signed(0.0002, 0.001))),
        other => panic!("no generator for {other}"),
    }
    w
}

/// Random activations, uniform in ±[0.01, 1) (never zero).
pub fn random_activations(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n).map(|_| rng.signed(0.01, 1.0)).collect()
}
