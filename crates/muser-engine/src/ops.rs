//! Element-wise and normalisation ops in two numerics: `Exact` (the oracle: f64 arithmetic,
//! one rounding to f32 at the end) and `Ggml` (the fast path: the rounding steps of ggml's CPU
//! kernels, so that it tracks llama.cpp).

/// Which arithmetic an op follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numerics {
    /// f64 throughout, rounded once: the oracle.
    Exact,
    /// ggml's CPU order and rounding (f64 sum of squares, f32 scale, f32 products, ...).
    Ggml,
}

/// `out = x / sqrt(mean(x^2) + eps) * w` (`w = None`: weightless), in place.
pub fn rms_norm(num: Numerics, x: &mut [f32], w: Option<&[f32]>, eps: f32) {
    let sum: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    let mean = sum / x.len() as f64;
    match num {
        Numerics::Exact => {
            let inv = 1.0 / (mean + f64::from(eps)).sqrt();
            for (i, v) in x.iter_mut().enumerate() {
                let wi = w.map_or(1.0, |w| f64::from(w[i]));
                *v = (f64::from(*v) * inv * wi) as f32;
            }
        }
        Numerics::Ggml => {
            // ggml_compute_forward_rms_norm_f32: double sum, float scale, then ggml_mul.
            let scale = 1.0f32 / ((mean + f64::from(eps)) as f32).sqrt();
            for (i, v) in x.iter_mut().enumerate() {
                *v *= scale;
                if let Some(w) = w {
                    *v *= w[i];
                }
            }
        }
    }
}

/// RoPE with adjacent pairs (ggml's "NORM" mode) on one head of `x`.
pub fn rope_adjacent(num: Numerics, x: &mut [f32], pos: usize, base: f32) {
    let d = x.len();
    match num {
        Numerics::Exact => {
            for i in 0..d / 2 {
                let theta = pos as f64 * f64::from(base).powf(-2.0 * i as f64 / d as f64);
                let (s, c) = theta.sin_cos();
                let (a, b) = (f64::from(x[2 * i]), f64::from(x[2 * i + 1]));
                x[2 * i] = (a * c - b * s) as f32;
                x[2 * i + 1] = (a * s + b * c) as f32;
            }
        }
        Numerics::Ggml => {
            // ggml_rope_cache_init: theta starts at pos and is multiplied by
            // theta_scale = base^(-2/d) once per pair, in f32.
            let theta_scale = base.powf(-2.0 / d as f32);
            let mut theta = pos as f32;
            for i in 0..d / 2 {
                let (s, c) = (theta.sin(), theta.cos());
                let (a, b) = (x[2 * i], x[2 * i + 1]);
                x[2 * i] = a * c - b * s;
                x[2 * i + 1] = a * s + b * c;
                theta *= theta_scale;
            }
        }
    }
}

pub fn sigmoid(num: Numerics, x: f32) -> f32 {
    match num {
        Numerics::Exact => (1.0 / (1.0 + (-f64::from(x)).exp())) as f32,
        Numerics::Ggml => 1.0 / (1.0 + (-x).exp()),
    }
}

/// `silu(g) * u`.
pub fn swiglu(num: Numerics, g: f32, u: f32) -> f32 {
    match num {
        Numerics::Exact => {
            let g = f64::from(g);
            (g / (1.0 + (-g).exp()) * f64::from(u)) as f32
        }
        Numerics::Ggml => g / (1.0 + (-g).exp()) * u,
    }
}

/// `logits *= scale`, then `logits = cap * tanh(logits / cap)` (cap 0: no cap), in place.
pub fn scale_softcap(num: Numerics, logits: &mut [f32], scale: f32, cap: f32) {
    match num {
        Numerics::Exact => {
            for v in logits.iter_mut() {
                let s = f64::from(*v) * f64::from(scale);
                *v = if cap != 0.0 {
                    let c = f64::from(cap);
                    (c * (s / c).tanh()) as f32
                } else {
                    s as f32
                };
            }
        }
        Numerics::Ggml => {
            // ggml_scale, then ggml_scale(1/cap), ggml_tanh, ggml_scale(cap).
            let inv = if cap != 0.0 { 1.0 / cap } else { 0.0 };
            for v in logits.iter_mut() {
                *v *= scale;
                if cap != 0.0 {
                    *v = (*v * inv).tanh() * cap;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_agree_to_rounding() {
        let mut a: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let mut b = a.clone();
        let w: Vec<f32> = (0..64).map(|i| 1.0 + i as f32 * 0.01).collect();
        rms_norm(Numerics::Exact, &mut a, Some(&w), 1e-5);
        rms_norm(Numerics::Ggml, &mut b, Some(&w), 1e-5);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 2e-6 * x.abs().max(1.0));
        }
        let mut a: Vec<f32> = (0..128).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut b = a.clone();
        rope_adjacent(Numerics::Exact, &mut a, 1234, 10000.0);
        rope_adjacent(Numerics::Ggml, &mut b, 1234, 10000.0);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 2e-3, "{x} {y}");
        }
        // Position 0 is the identity.
        let mut c = vec![0.5f32, -1.0, 2.0, 3.0];
        rope_adjacent(Numerics::Exact, &mut c, 0, 500000.0);
        assert_eq!(c, vec![0.5, -1.0, 2.0, 3.0]);
    }

    #[test]
    fn softcap_scales_first() {
        let mut l = vec![100.0f32, -100.0, 0.0];
        scale_softcap(Numerics::Exact, &mut l, 0.5, 20.0);
        assert!((l[0] - 20.0 * (50.0f32 / 20.0).tanh()).abs() < 1e-5);
        assert_eq!(l[2], 0.0);
        let mut l = vec![100.0f32];
        scale_softcap(Numerics::Ggml, &mut l, 0.5, 0.0);
        assert_eq!(l[0], 50.0);
    }
}
