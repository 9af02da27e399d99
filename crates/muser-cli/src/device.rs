//! `--device cpu|cpu-ref|cuda[:N]|auto`: parsed once into a typed choice, then a backend.

use anyhow::{Context, Result};
use muser_engine::{Backend, CpuRef};

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
    let opts = muser_engine::cuda::CudaOptions {
        ordinal,
        cache_dir: Some(crate::model_path::cache_dir().join("cuda")),
    };
    let dev =
        muser_engine::cuda::Cuda::new(&opts).with_context(|| format!("--device cuda:{ordinal}"))?;
    eprintln!(
        "cuda:{ordinal}: {} (compute capability {}.{})",
        dev.device_name, dev.compute_capability.0, dev.compute_capability.1
    );
    Ok(Box::new(dev))
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
