//! ggml block layouts (`#[repr(C)]`, alignment 1) and zero-copy casts between bytes and blocks.
//!
//! Every multi-byte field is stored as little-endian bytes, exactly as ggml writes it on a
//! little-endian machine, so a block can start at any byte offset of a mapped file.

use std::mem::{align_of, size_of};

use muser_gguf::{GgmlType, QK_K};

use crate::float::f16_to_f32;

/// Elements per block of the legacy formats (Q4_0 .. Q8_0) and IQ4_NL.
pub const QK32: usize = 32;

mod sealed {
    pub trait Sealed {}
}

/// A ggml block type: plain bytes, alignment 1, every bit pattern valid, no padding.
///
/// Sealed: only the block structs of this module implement it, each checked at compile time.
pub trait Block: sealed::Sealed + Copy + 'static {
    /// The ggml type this block encodes.
    const TYPE: GgmlType;
    /// Elements per block.
    const ELEMS: usize;
    /// A block with every byte zero.
    const ZERO: Self;
}

/// Views `bytes` as blocks; `None` unless `bytes.len()` is a multiple of the block size.
pub fn cast_blocks<B: Block>(bytes: &[u8]) -> Option<&[B]> {
    if bytes.len() % size_of::<B>() != 0 {
        return None;
    }
    let n = bytes.len() / size_of::<B>();
    // SAFETY: `B: Block` is sealed; each implementor is `#[repr(C)]`, built only from `u8`/`i8`
    // arrays (checked: alignment 1 and size = ggml's size, so no padding), hence any byte
    // sequence of `n * size_of::<B>()` bytes at any address is a valid `[B; n]`.
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<B>(), n) })
}

/// Mutable variant of [`cast_blocks`].
pub fn cast_blocks_mut<B: Block>(bytes: &mut [u8]) -> Option<&mut [B]> {
    if bytes.len() % size_of::<B>() != 0 {
        return None;
    }
    let n = bytes.len() / size_of::<B>();
    // SAFETY: as in `cast_blocks`; additionally every byte pattern written through a `B` is a
    // valid `u8`, so the bytes stay valid after the borrow ends.
    Some(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<B>(), n) })
}

/// The raw bytes of `blocks`.
pub fn blocks_as_bytes<B: Block>(blocks: &[B]) -> &[u8] {
    // SAFETY: blocks have no padding and alignment 1, so they are exactly their bytes.
    unsafe {
        std::slice::from_raw_parts(blocks.as_ptr().cast::<u8>(), std::mem::size_of_val(blocks))
    }
}

macro_rules! block {
    ($(#[$m:meta])* $name:ident, $ty:ident, $elems:expr, $size:expr, { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t),*
        }
        impl sealed::Sealed for $name {}
        impl Block for $name {
            const TYPE: GgmlType = GgmlType::$ty;
            const ELEMS: usize = $elems;
            // SAFETY: all fields are integer arrays, for which all-zero is valid.
            const ZERO: Self = unsafe { std::mem::zeroed() };
        }
        const _: () = assert!(size_of::<$name>() == $size);
        const _: () = assert!(align_of::<$name>() == 1);
    };
}

block!(
    /// Q4_0: `x = d * (q - 8)`, 4-bit quants.
    BlockQ40, Q4_0, QK32, 18, {
    /// f16 scale.
    d: [u8; 2],
    /// Low nibbles: elements 0..16, high nibbles: 16..32.
    qs: [u8; QK32 / 2],
});

block!(
    /// Q4_1: `x = d * q + m`.
    BlockQ41, Q4_1, QK32, 20, {
    d: [u8; 2],
    m: [u8; 2],
    qs: [u8; QK32 / 2],
});

block!(
    /// Q5_0: `x = d * (q - 16)`, the fifth bits in `qh`.
    BlockQ50, Q5_0, QK32, 22, {
    d: [u8; 2],
    /// Little-endian u32: bit j is the high bit of element j.
    qh: [u8; 4],
    qs: [u8; QK32 / 2],
});

block!(
    /// Q5_1: `x = d * q + m`.
    BlockQ51, Q5_1, QK32, 24, {
    d: [u8; 2],
    m: [u8; 2],
    qh: [u8; 4],
    qs: [u8; QK32 / 2],
});

block!(
    /// Q8_0: `x = d * q`.
    BlockQ80, Q8_0, QK32, 34, {
    d: [u8; 2],
    qs: [i8; QK32],
});

block!(
    /// Q8_1: `x = d * q`, plus `s = d * sum(q)` (both f16); the activation type of Q4_1/Q5_1.
    BlockQ81, Q8_1, QK32, 36, {
    d: [u8; 2],
    s: [u8; 2],
    qs: [i8; QK32],
});

block!(
    /// Q2_K: 16 sub-blocks of 16, 4-bit scales and mins, `x = d*sc*q - dmin*m`.
    BlockQ2K, Q2_K, QK_K, 84, {
    /// Low nibble: scale, high nibble: min.
    scales: [u8; QK_K / 16],
    qs: [u8; QK_K / 4],
    d: [u8; 2],
    dmin: [u8; 2],
});

block!(
    /// Q3_K: 16 sub-blocks of 16, 6-bit signed scales, `x = d*(sc-32)*(q - 4*!hbit)`.
    BlockQ3K, Q3_K, QK_K, 110, {
    hmask: [u8; QK_K / 8],
    qs: [u8; QK_K / 4],
    scales: [u8; 12],
    d: [u8; 2],
});

block!(
    /// Q4_K: 8 sub-blocks of 32, 6-bit scales and mins, `x = d*sc*q - dmin*m`.
    BlockQ4K, Q4_K, QK_K, 144, {
    d: [u8; 2],
    dmin: [u8; 2],
    scales: [u8; 12],
    qs: [u8; QK_K / 2],
});

block!(
    /// Q5_K: as Q4_K with a fifth bit per element in `qh`.
    BlockQ5K, Q5_K, QK_K, 176, {
    d: [u8; 2],
    dmin: [u8; 2],
    scales: [u8; 12],
    qh: [u8; QK_K / 8],
    qs: [u8; QK_K / 2],
});

block!(
    /// Q6_K: 16 sub-blocks of 16, 8-bit signed scales, `x = d*sc*(q - 32)`.
    BlockQ6K, Q6_K, QK_K, 210, {
    ql: [u8; QK_K / 2],
    qh: [u8; QK_K / 4],
    scales: [i8; QK_K / 16],
    d: [u8; 2],
});

block!(
    /// Q8_K: f32 scale, `x = d * q`, with per-16 sums of the quants.
    BlockQ8K, Q8_K, QK_K, 292, {
    /// Little-endian f32.
    d: [u8; 4],
    qs: [i8; QK_K],
    /// Little-endian i16 sums of each 16 quants.
    bsums: [[u8; 2]; QK_K / 16],
});

block!(
    /// IQ4_NL: `x = d * KVALUES_IQ4NL[q]`.
    BlockIQ4NL, IQ4_NL, QK32, 18, {
    d: [u8; 2],
    qs: [u8; QK32 / 2],
});

block!(
    /// IQ4_XS: 8 sub-blocks of 32 with 6-bit signed scales, `x = d*(ls-32)*KVALUES_IQ4NL[q]`.
    BlockIQ4XS, IQ4_XS, QK_K, 136, {
    d: [u8; 2],
    /// Little-endian u16: 2 high bits of each sub-block scale.
    scales_h: [u8; 2],
    scales_l: [u8; QK_K / 64],
    qs: [u8; QK_K / 2],
});

impl BlockQ8K {
    /// The f32 scale.
    pub fn d_f32(&self) -> f32 {
        f32::from_le_bytes(self.d)
    }

    /// Sum of quants `16*j .. 16*j+16`, as stored.
    pub fn bsum(&self, j: usize) -> Option<i16> {
        self.bsums.get(j).map(|b| i16::from_le_bytes(*b))
    }
}

macro_rules! f16_scale {
    ($($name:ident),*) => {$(
        impl $name {
            /// The f16 scale `d`, widened to f32.
            pub fn d_f32(&self) -> f32 {
                f16_to_f32(u16::from_le_bytes(self.d))
            }
        }
    )*};
}
f16_scale!(
    BlockQ40, BlockQ41, BlockQ50, BlockQ51, BlockQ80, BlockQ81, BlockQ2K, BlockQ3K, BlockQ4K,
    BlockQ5K, BlockQ6K, BlockIQ4NL, BlockIQ4XS
);

#[cfg(test)]
mod tests {
    use super::*;

    fn check<B: Block>() {
        assert_eq!(size_of::<B>(), B::TYPE.type_size(), "{}", B::TYPE);
        assert_eq!(B::ELEMS, B::TYPE.block_size(), "{}", B::TYPE);
    }

    #[test]
    fn sizes_match_the_type_table() {
        check::<BlockQ40>();
        check::<BlockQ41>();
        check::<BlockQ50>();
        check::<BlockQ51>();
        check::<BlockQ80>();
        // Not BlockQ81: muser-gguf's table still lists Q8_1 at 40 bytes (ggml's pre-2024
        // f32 `d`/`s` layout); ggml's block_q8_1 is 36 bytes (f16 `d`, `s`).
        assert_eq!(size_of::<BlockQ81>(), 36);
        check::<BlockQ2K>();
        check::<BlockQ3K>();
        check::<BlockQ4K>();
        check::<BlockQ5K>();
        check::<BlockQ6K>();
        check::<BlockQ8K>();
        check::<BlockIQ4NL>();
        check::<BlockIQ4XS>();
    }

    #[test]
    fn casts_work_at_any_offset() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1 + 2 * 144).collect();
        let blocks = cast_blocks::<BlockQ4K>(&bytes[1..]).expect("two blocks");
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].d, [1, 2]);
        assert_eq!(blocks[1].qs[127], bytes[288]);
        assert_eq!(blocks_as_bytes(blocks), &bytes[1..]);
        assert!(cast_blocks::<BlockQ4K>(&bytes[..143]).is_none());
        assert!(cast_blocks::<BlockQ4K>(&[]).is_some_and(|b| b.is_empty()));
    }
}
