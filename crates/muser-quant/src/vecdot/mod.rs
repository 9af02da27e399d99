//! Dot products of one weight row with one quantized activation row, per weight type and
//! instruction set, and [`Kernels`]: the dot product picked once for a weight type.
//!
//! * [`kquants`], [`legacy`], [`float`]: scalar kernels in the operation order of ggml's
//!   generic C (`ggml-cpu/quants.c`, `vec.cpp` without SIMD).
//! * `avx2` (x86-64 only): ggml's AVX2 kernels; they differ from the scalar ones only in the
//!   order of the f32 additions (the integer sums are exact in both).
//!
//! Q2_K and Q3_K have no AVX2 kernel yet: [`Kernels`] uses the scalar one for them.

#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod float;
pub mod kquants;
pub mod legacy;

use muser_gguf::GgmlType;

use crate::blocks::{
    cast_blocks, BlockIQ4NL, BlockIQ4XS, BlockQ2K, BlockQ3K, BlockQ40, BlockQ41, BlockQ4K,
    BlockQ50, BlockQ51, BlockQ5K, BlockQ6K, BlockQ80, BlockQ81, BlockQ8K,
};
use crate::error::{check_len, Error, Result};
use crate::q8::{activation_row_size, unsupported_matmul, vec_dot_type};

/// Instruction set of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust, any CPU.
    Scalar,
    /// x86-64 with AVX2, FMA and F16C.
    Avx2,
}

impl Isa {
    /// The best instruction set this CPU supports.
    pub fn detect() -> Isa {
        if Isa::Avx2.is_available() {
            Isa::Avx2
        } else {
            Isa::Scalar
        }
    }

    /// Whether this CPU can run kernels of this instruction set.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Avx2 => avx2_available(),
        }
    }

    /// Short name (`"scalar"`, `"avx2"`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn avx2_available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

#[cfg(not(target_arch = "x86_64"))]
fn avx2_available() -> bool {
    false
}

/// Weight row bytes × activation row bytes. `unsafe` because SIMD kernels need their
/// instruction set; [`Kernels`] only holds one after checking it is available.
type DotFn = unsafe fn(&[u8], &[u8]) -> f32;

/// Four activation rows against one weight row (see `avx2::vec_dot_q4k_q8k_x4`).
type Dot4Fn = unsafe fn(&[u8], [&[u8]; 4]) -> [f32; 4];

/// Byte-level wrapper of a scalar block kernel (NaN if a row is not whole blocks; callers
/// check lengths first, so that never happens).
macro_rules! scalar_bytes {
    ($name:ident, $w:ty, $a:ty, $f:path) => {
        fn $name(w: &[u8], a: &[u8]) -> f32 {
            match (cast_blocks::<$w>(w), cast_blocks::<$a>(a)) {
                (Some(w), Some(a)) => $f(w, a),
                _ => f32::NAN,
            }
        }
    };
}

scalar_bytes!(s_q40, BlockQ40, BlockQ80, legacy::vec_dot_q40_q80_ref);
scalar_bytes!(s_q41, BlockQ41, BlockQ81, legacy::vec_dot_q41_q81_ref);
scalar_bytes!(s_q50, BlockQ50, BlockQ80, legacy::vec_dot_q50_q80_ref);
scalar_bytes!(s_q51, BlockQ51, BlockQ81, legacy::vec_dot_q51_q81_ref);
scalar_bytes!(s_q80, BlockQ80, BlockQ80, legacy::vec_dot_q80_q80_ref);
scalar_bytes!(s_iq4nl, BlockIQ4NL, BlockQ80, legacy::vec_dot_iq4nl_q80_ref);
scalar_bytes!(s_q2k, BlockQ2K, BlockQ8K, kquants::vec_dot_q2k_q8k_ref);
scalar_bytes!(s_q3k, BlockQ3K, BlockQ8K, kquants::vec_dot_q3k_q8k_ref);
scalar_bytes!(s_q4k, BlockQ4K, BlockQ8K, kquants::vec_dot_q4k_q8k_ref);
scalar_bytes!(s_q5k, BlockQ5K, BlockQ8K, kquants::vec_dot_q5k_q8k_ref);
scalar_bytes!(s_q6k, BlockQ6K, BlockQ8K, kquants::vec_dot_q6k_q8k_ref);
scalar_bytes!(
    s_iq4xs,
    BlockIQ4XS,
    BlockQ8K,
    kquants::vec_dot_iq4xs_q8k_ref
);

fn scalar_dot(weight: GgmlType) -> Option<DotFn> {
    use GgmlType as T;
    Some(match weight {
        T::F32 => float::vec_dot_f32_ref,
        T::F16 => float::vec_dot_f16_ref,
        T::BF16 => float::vec_dot_bf16_ref,
        T::Q4_0 => s_q40,
        T::Q4_1 => s_q41,
        T::Q5_0 => s_q50,
        T::Q5_1 => s_q51,
        T::Q8_0 => s_q80,
        T::IQ4_NL => s_iq4nl,
        T::Q2_K => s_q2k,
        T::Q3_K => s_q3k,
        T::Q4_K => s_q4k,
        T::Q5_K => s_q5k,
        T::Q6_K => s_q6k,
        T::IQ4_XS => s_iq4xs,
        _ => return None,
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2_bytes {
    use super::*;

    /// Byte-level wrapper of an AVX2 block kernel.
    macro_rules! avx2_bytes {
        ($name:ident, $w:ty, $a:ty, $f:path) => {
            /// # Safety
            /// The CPU must support AVX2, FMA and F16C.
            pub(super) unsafe fn $name(w: &[u8], a: &[u8]) -> f32 {
                match (cast_blocks::<$w>(w), cast_blocks::<$a>(a)) {
                    (Some(w), Some(a)) => $f(w, a),
                    _ => f32::NAN,
                }
            }
        };
    }

    avx2_bytes!(q40, BlockQ40, BlockQ80, avx2::vec_dot_q40_q80);
    avx2_bytes!(q41, BlockQ41, BlockQ81, avx2::vec_dot_q41_q81);
    avx2_bytes!(q50, BlockQ50, BlockQ80, avx2::vec_dot_q50_q80);
    avx2_bytes!(q51, BlockQ51, BlockQ81, avx2::vec_dot_q51_q81);
    avx2_bytes!(q80, BlockQ80, BlockQ80, avx2::vec_dot_q80_q80);
    avx2_bytes!(iq4nl, BlockIQ4NL, BlockQ80, avx2::vec_dot_iq4nl_q80);
    avx2_bytes!(q4k, BlockQ4K, BlockQ8K, avx2::vec_dot_q4k_q8k);
    avx2_bytes!(q5k, BlockQ5K, BlockQ8K, avx2::vec_dot_q5k_q8k);
    avx2_bytes!(q6k, BlockQ6K, BlockQ8K, avx2::vec_dot_q6k_q8k);
    avx2_bytes!(iq4xs, BlockIQ4XS, BlockQ8K, avx2::vec_dot_iq4xs_q8k);

    /// Byte-level wrapper of a four-row AVX2 block kernel.
    macro_rules! avx2_bytes4 {
        ($name:ident, $w:ty, $f:path) => {
            /// # Safety
            /// The CPU must support AVX2, FMA and F16C.
            pub(super) unsafe fn $name(w: &[u8], a: [&[u8]; 4]) -> [f32; 4] {
                match (
                    cast_blocks::<$w>(w),
                    cast_blocks::<BlockQ8K>(a[0]),
                    cast_blocks::<BlockQ8K>(a[1]),
                    cast_blocks::<BlockQ8K>(a[2]),
                    cast_blocks::<BlockQ8K>(a[3]),
                ) {
                    (Some(w), Some(a0), Some(a1), Some(a2), Some(a3))
                        if [a0, a1, a2, a3].iter().all(|a| a.len() == w.len()) =>
                    {
                        $f(w, [a0, a1, a2, a3])
                    }
                    _ => [f32::NAN; 4],
                }
            }
        };
    }

    avx2_bytes4!(q4k_x4, BlockQ4K, avx2::vec_dot_q4k_q8k_x4);
    avx2_bytes4!(q6k_x4, BlockQ6K, avx2::vec_dot_q6k_q8k_x4);

    pub(super) fn dot(weight: GgmlType) -> Option<DotFn> {
        use GgmlType as T;
        Some(match weight {
            T::F32 => avx2::vec_dot_f32,
            T::F16 => avx2::vec_dot_f16,
            T::BF16 => avx2::vec_dot_bf16,
            T::Q4_0 => q40,
            T::Q4_1 => q41,
            T::Q5_0 => q50,
            T::Q5_1 => q51,
            T::Q8_0 => q80,
            T::IQ4_NL => iq4nl,
            T::Q4_K => q4k,
            T::Q5_K => q5k,
            T::Q6_K => q6k,
            T::IQ4_XS => iq4xs,
            _ => return None,
        })
    }
}

#[cfg(target_arch = "x86_64")]
fn avx2_dot(weight: GgmlType) -> Option<DotFn> {
    avx2_bytes::dot(weight)
}

#[cfg(not(target_arch = "x86_64"))]
fn avx2_dot(_weight: GgmlType) -> Option<DotFn> {
    None
}

#[cfg(target_arch = "x86_64")]
fn avx2_dot4(weight: GgmlType) -> Option<Dot4Fn> {
    match weight {
        GgmlType::Q4_K => Some(avx2_bytes::q4k_x4),
        GgmlType::Q6_K => Some(avx2_bytes::q6k_x4),
        _ => None,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn avx2_dot4(_weight: GgmlType) -> Option<Dot4Fn> {
    None
}

/// The dot product for one weight type, chosen once (by instruction set) and then reused.
#[derive(Clone, Copy)]
pub struct Kernels {
    weight: GgmlType,
    act: GgmlType,
    isa: Isa,
    dot: DotFn,
    /// A four-row kernel whose results are bit-identical to four `dot` calls, if any.
    dot4: Option<Dot4Fn>,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels")
            .field("weight", &self.weight)
            .field("act", &self.act)
            .field("isa", &self.isa)
            .finish()
    }
}

impl Kernels {
    /// Kernels for `weight` using at most instruction set `isa` (a type without a kernel for
    /// `isa` falls back to the scalar one; [`Kernels::isa`] says which was taken).
    ///
    /// Errors: [`Error::IsaUnavailable`] if this CPU lacks `isa`, [`Error::UnsupportedOp`]
    /// for a weight type without a dot product.
    pub fn new(weight: GgmlType, isa: Isa) -> Result<Kernels> {
        if !isa.is_available() {
            return Err(Error::IsaUnavailable { isa: isa.name() });
        }
        let act = vec_dot_type(weight).ok_or_else(|| unsupported_matmul(weight))?;
        let scalar = scalar_dot(weight).ok_or_else(|| unsupported_matmul(weight))?;
        let simd = match isa {
            Isa::Avx2 => avx2_dot(weight),
            Isa::Scalar => None,
        };
        Ok(match simd {
            Some(dot) => Kernels {
                weight,
                act,
                isa,
                dot,
                dot4: avx2_dot4(weight),
            },
            None => Kernels {
                weight,
                act,
                isa: Isa::Scalar,
                dot: scalar,
                dot4: None,
            },
        })
    }

    /// Kernels for `weight` with the best instruction set of this CPU.
    pub fn detect(weight: GgmlType) -> Result<Kernels> {
        Kernels::new(weight, Isa::detect())
    }

    /// The weight type.
    pub fn weight_type(&self) -> GgmlType {
        self.weight
    }

    /// The activation type (`vec_dot_type(weight)`).
    pub fn act_type(&self) -> GgmlType {
        self.act
    }

    /// The instruction set of the chosen dot product.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Dot product of `n` elements: `w` one weight row (`row_size(weight, n)` bytes), `a`
    /// one activation row as [`crate::quantize_activation`] writes it.
    pub fn vec_dot(&self, n: usize, w: &[u8], a: &[u8]) -> Result<f32> {
        check_len(
            "weight row bytes",
            crate::api::row_size(self.weight, n)?,
            w.len(),
        )?;
        check_len(
            "activation row bytes",
            activation_row_size(self.act, n)?,
            a.len(),
        )?;
        Ok(self.dot_unchecked(w, a))
    }

    /// Four activation rows against one weight row in one pass, if this type has such a
    /// kernel; each result is bit-identical to [`Kernels::dot_unchecked`] on that row.
    #[inline]
    pub(crate) fn dot4_unchecked(&self, w: &[u8], a: [&[u8]; 4]) -> Option<[f32; 4]> {
        // SAFETY: `dot4` is set only when `new` found AVX2 (with FMA and F16C) available;
        // the kernel reads only within the slices it is given.
        self.dot4.map(|f| unsafe { f(w, a) })
    }

    /// Dot product of rows whose lengths the caller has checked (a mismatch gives a wrong
    /// or NaN result, never undefined behaviour).
    #[inline]
    pub(crate) fn dot_unchecked(&self, w: &[u8], a: &[u8]) -> f32 {
        // SAFETY: `dot` is a SIMD kernel only when `new` found its instruction set available;
        // kernels read only within the slices they are given.
        unsafe { (self.dot)(w, a) }
    }
}
