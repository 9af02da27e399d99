//! Quantizer throughput (MB/s of f32 input). Ignored by default; run in release:
//! `cargo test -p muser-quant --release --test throughput -- --ignored --nocapture`.

use std::time::Instant;

use muser_quant::{quantize_row, row_size, GgmlType};

#[test]
#[ignore = "measurement; run in release with --ignored --nocapture"]
fn quantizer_throughput() {
    let n = 1 << 22; // 4M weights = 16 MiB of f32
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.05
        })
        .collect();
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::F16,
        GgmlType::BF16,
    ] {
        let mut q = vec![0u8; row_size(ty, n).unwrap()];
        quantize_row(ty, &x, &mut q).unwrap(); // warm up
        let t = Instant::now();
        quantize_row(ty, &x, &mut q).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let mb = (n * 4) as f64 / 1e6;
        println!(
            "{ty:>5}: {:8.1} MB/s of f32 input ({:.1} M weights/s)",
            mb / secs,
            n as f64 / secs / 1e6
        );
    }
}
