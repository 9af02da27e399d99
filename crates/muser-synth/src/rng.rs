//! Small deterministic RNG (SplitMix64 seeding, xoshiro256++ stream) for reproducible weights.

/// SplitMix64: used to derive independent stream seeds from (seed, tensor, chunk).
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a of a string, to key streams by tensor name rather than by position.
pub fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// xoshiro256++ (Blackman & Vigna): fast, good enough for synthetic weights.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut s = [0u64; 4];
        for v in &mut s {
            x = splitmix64(x);
            *v = x;
        }
        Rng { s }
    }

    /// A stream keyed by several values (e.g. seed, tensor-name hash, chunk index).
    pub fn keyed(parts: &[u64]) -> Rng {
        let seed = parts
            .iter()
            .fold(0x5151_5151_u64, |h, &p| splitmix64(h ^ splitmix64(p)));
        Rng::new(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// Uniform in [-1, 1).
    pub fn symmetric(&mut self) -> f32 {
        self.f32() * 2.0 - 1.0
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::keyed(&[1, 2, 3]);
        let mut y = Rng::keyed(&[1, 2, 4]);
        assert_ne!(x.next_u64(), y.next_u64());
        let mut r = Rng::new(7);
        let mean: f32 = (0..10000).map(|_| r.symmetric()).sum::<f32>() / 10000.0;
        assert!(mean.abs() < 0.05);
        assert!((0..1000).all(|_| r.below(10) < 10));
    }
}
