//! `--device cpu|cpu-ref|cuda[:N]|auto`: parsed once into a typed choice, then a backend.

use std::path::Path;

use anyhow::{Context, Result};
use muser_engine::cuda::{Cuda, CudaSession};
use muser_engine::{Backend, CpuRef, Glimmer, HostSequence, Sequence};

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The exact f32/f64 oracle.
    CpuRef,
    /// The fast CPU path (quantized activations, SIMD).
    Cpu,
    /// An NVIDIA GPU by index.
    Cuda(usize),
    /// The best available device.
    Auto,
}

impl std::str::FromStr for Device {
    type Err = String;

    fn from_str(s: &str) -> Result<Device, String> {
        match s {
            "cpu-ref" => Ok(Device::CpuRef),
            "cpu" => Ok(Device::Cpu),
            "auto" => Ok(Device::Auto),
            "cuda" => Ok(Device::Cuda(0)),
            _ => match s.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(Device::Cuda(n)),
                _ => Err(format!(
                    "unknown device {s:?} (expected cpu, cpu-ref, cuda, cuda:N or auto)"
                )),
            },
        }
    }
}

/// `--split auto|never`: whether CPU decode batches of a small model are split across
/// threads (each thread its own sequences) instead of spreading every op over all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Split {
    /// Two or more sequences of a model of at most 16 MiB per token.
    #[default]
    Auto,
    /// Never.
    Never,
}

impl From<Split> for muser_engine::SplitPolicy {
    fn from(s: Split) -> Self {
        match s {
            Split::Auto => muser_engine::SplitPolicy::Auto,
            Split::Never => muser_engine::SplitPolicy::Never,
        }
    }
}

/// The backend for a device choice; `threads` sizes the CPU decode team (default: all cores).
pub fn backend(device: Device, threads: Option<usize>) -> Result<Box<dyn Backend>> {
    match device {
        Device::CpuRef => Ok(Box::new(CpuRef::default())),
        Device::Cpu => Ok(Box::new(muser_engine::Cpu::new(threads)?)),
        Device::Auto if muser_engine::cuda::available() => cuda(0),
        Device::Auto => Ok(Box::new(muser_engine::Cpu::new(threads)?)),
        Device::Cuda(n) => cuda(n),
    }
}

fn cuda(ordinal: usize) -> Result<Box<dyn Backend>> {
    Ok(Box::new(cuda_device(ordinal, PrefillWeights::default())?))
}

fn cuda_device(ordinal: usize, prefill_weights: PrefillWeights) -> Result<Cuda> {
    let opts = muser_engine::cuda::CudaOptions {
        ordinal,
        cache_dir: Some(crate::model_path::cache_dir().join("cuda")),
        prefill_weights: prefill_weights.into(),
    };
    let dev = Cuda::new(&opts).with_context(|| format!("--device cuda:{ordinal}"))?;
    eprintln!(
        "cuda:{ordinal}: {} (compute capability {}.{})",
        dev.device_name, dev.compute_capability.0, dev.compute_capability.1
    );
    Ok(dev)
}

/// `--prefill-weights auto|per-chunk`: whether CUDA prompts use f16 copies of the weights
/// kept on the GPU (made once, where the free memory allows them, the planned KV caches and
/// 8 GiB) or dequantize the weights at every chunk (no extra memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PrefillWeights {
    #[default]
    Auto,
    PerChunk,
}

impl From<PrefillWeights> for muser_engine::cuda::PrefillWeights {
    fn from(p: PrefillWeights) -> Self {
        match p {
            PrefillWeights::Auto => muser_engine::cuda::PrefillWeights::Auto,
            PrefillWeights::PerChunk => muser_engine::cuda::PrefillWeights::PerChunk,
        }
    }
}

/// How a command will use the device: the KV caches it holds at once (what the f16 prefill
/// copies must leave free) and the prefill copies' policy.
#[derive(Debug, Clone, Copy)]
pub struct DevicePlan {
    pub sequences: usize,
    pub positions: usize,
    pub prefill_weights: PrefillWeights,
}

impl DevicePlan {
    /// One sequence of `positions` positions.
    pub fn one(positions: usize) -> DevicePlan {
        DevicePlan {
            sequences: 1,
            positions,
            prefill_weights: PrefillWeights::Auto,
        }
    }
}

/// A model opened for generation on a device: host backends run the graph over a host KV
/// cache; CUDA runs whole tokens on the GPU (`CudaSession`).
pub struct Opened {
    pub model: Glimmer,
    cuda: Option<Cuda>,
}

impl Opened {
    pub fn open(
        path: &Path,
        device: Device,
        threads: Option<usize>,
        plan: DevicePlan,
    ) -> Result<Opened> {
        let cuda = match device {
            Device::Cuda(n) => Some(cuda_device(n, plan.prefill_weights)?),
            Device::Auto if muser_engine::cuda::available() => {
                Some(cuda_device(0, plan.prefill_weights)?)
            }
            _ => None,
        };
        // With CUDA the host backend only serves weight access (every op runs on the GPU).
        let host: Box<dyn Backend> = match (&cuda, device) {
            (Some(_), _) => Box::new(CpuRef::default()),
            (None, d) => backend(d, threads)?,
        };
        let model =
            Glimmer::open(path, host).with_context(|| format!("loading {}", path.display()))?;
        if let Some(dev) = &cuda {
            let ordinal = match device {
                Device::Cuda(n) => n,
                _ => 0,
            };
            let positions = plan.positions.min(model.cfg.context_length).max(1);
            let kv = plan.sequences * CudaSession::kv_bytes_for(&model.cfg, positions);
            upload(dev, &model, ordinal, kv)?;
        }
        Ok(Opened { model, cuda })
    }

    /// The CUDA device, when the model runs on one.
    pub fn cuda(&self) -> Option<&Cuda> {
        self.cuda.as_ref()
    }

    /// The model and the CUDA device (weights uploaded), when it runs on one.
    pub fn into_parts(self) -> (Glimmer, Option<Cuda>) {
        (self.model, self.cuda)
    }

    /// A new sequence holding up to `max_positions` positions.
    pub fn sequence(&self, max_positions: usize) -> Result<Box<dyn Sequence + '_>> {
        Ok(match &self.cuda {
            Some(dev) => Box::new(CudaSession::new(dev, &self.model, max_positions)?),
            None => Box::new(HostSequence::new(&self.model, max_positions)),
        })
    }

    /// Where it runs, for reports.
    pub fn device_name(&self) -> &str {
        match &self.cuda {
            Some(_) => "cuda",
            None => self.model.backend().name(),
        }
    }
}

/// Uploads every weight matrix once, with a progress bar, and reports the rate and VRAM; then
/// the f16 copies of the batched prefill, where the memory allows them with `kv_bytes` of KV
/// caches left free (`PrefillWeights::Auto`).
fn upload(dev: &Cuda, model: &Glimmer, ordinal: usize, kv_bytes: usize) -> Result<()> {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "uploading weights {bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .context("progress bar template")?,
    );
    let report = dev
        .upload_model(model, &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .with_context(|| format!("uploading the weights to cuda:{ordinal}"))?;
    bar.finish_and_clear();
    eprintln!("cuda:{ordinal}: {report}");
    // Prompts then skip the per-chunk dequantization where the memory allows.
    let kept = dev
        .keep_prefill_weights_leaving(&model.weights, kv_bytes)
        .with_context(|| format!("dequantizing the prefill weights on cuda:{ordinal}"))?;
    eprintln!("cuda:{ordinal}: {kept}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Device;

    #[test]
    fn parses_every_form() {
        assert_eq!("cpu".parse(), Ok(Device::Cpu));
        assert_eq!("cpu-ref".parse(), Ok(Device::CpuRef));
        assert_eq!("cuda".parse(), Ok(Device::Cuda(0)));
        assert_eq!("cuda:3".parse(), Ok(Device::Cuda(3)));
        assert_eq!("auto".parse(), Ok(Device::Auto));
        assert!("gpu".parse::<Device>().is_err());
        assert!("cuda:x".parse::<Device>().is_err());
    }
}
