//! IQ4_NL and IQ4_XS: non-linear 4-bit codebook formats, reference dequantization.

use muser_gguf::QK_K;

use crate::blocks::{BlockIQ4NL, BlockIQ4XS, QK32};
use crate::error::Result;
use crate::legacy::{check_elems, out_chunks};

/// ggml's `kvalues_iq4nl`: the 16 code points of IQ4_NL / IQ4_XS.
pub const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

#[inline]
fn kvalue(nibble: u8) -> f32 {
    f32::from(KVALUES_IQ4NL[usize::from(nibble & 0xF)])
}

/// `y = d * KVALUES_IQ4NL[q]`.
pub fn dequantize_row_iq4nl_ref(blocks: &[BlockIQ4NL], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockIQ4NL>("IQ4_NL output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK32>(out)) {
        let d = b.d_f32();
        for j in 0..QK32 / 2 {
            y[j] = d * kvalue(b.qs[j]);
            y[j + QK32 / 2] = d * kvalue(b.qs[j] >> 4);
        }
    }
    Ok(())
}

/// `y = (d * (ls - 32)) * KVALUES_IQ4NL[q]` per 32-element sub-block.
pub fn dequantize_row_iq4xs_ref(blocks: &[BlockIQ4XS], out: &mut [f32]) -> Result<()> {
    check_elems::<BlockIQ4XS>("IQ4_XS output length", blocks.len(), out.len())?;
    for (b, y) in blocks.iter().zip(out_chunks::<QK_K>(out)) {
        let d = b.d_f32();
        let scales_h = u16::from_le_bytes(b.scales_h);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
            let high = ((scales_h >> (2 * ib)) & 3) as u8;
            let ls = i32::from(low | (high << 4));
            let dl = d * (ls - 32) as f32;
            let qs = &b.qs[16 * ib..16 * ib + 16];
            for j in 0..16 {
                y[j] = dl * kvalue(qs[j]);
                y[j + 16] = dl * kvalue(qs[j] >> 4);
            }
        }
    }
    Ok(())
}
