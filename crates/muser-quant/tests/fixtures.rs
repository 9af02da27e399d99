//! Bit-exactness against the committed reference fixtures: dequantization (gguf Python package
//! and ggml's C library) and quantization (same, including ggml's k-quant `_ref` quantizers).

mod common;

use std::collections::BTreeSet;

use common::{assert_bytes_identical, assert_f32_identical, load, Kind, Record};
use muser_quant::{dequantize_row, quantize_row, GgmlType};

fn check(records: &[Record]) -> (BTreeSet<&'static str>, BTreeSet<&'static str>) {
    let mut deq = BTreeSet::new();
    let mut q = BTreeSet::new();
    let mut failures = Vec::new();
    for r in records {
        let what = format!("{} {}", r.ty, r.label);
        let result = std::panic::catch_unwind(|| match r.kind {
            Kind::Dequant => {
                let mut out = vec![0.0f32; r.floats.len()];
                dequantize_row(r.ty, &r.bytes, &mut out).unwrap();
                assert_f32_identical(&format!("dequantize {what}"), &out, &r.floats);
            }
            Kind::Quant => {
                let mut out = vec![0u8; r.bytes.len()];
                quantize_row(r.ty, &r.floats, &mut out).unwrap();
                assert_bytes_identical(&format!("quantize {what}"), r.ty, &out, &r.bytes);
            }
        });
        match result {
            Ok(()) => {
                match r.kind {
                    Kind::Dequant => deq.insert(r.ty.name()),
                    Kind::Quant => q.insert(r.ty.name()),
                };
            }
            Err(e) => failures.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| format!("{what}: panicked")),
            ),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    (deq, q)
}

fn names(types: &[GgmlType]) -> BTreeSet<&'static str> {
    types.iter().map(|t| t.name()).collect()
}

#[test]
fn gguf_python_fixtures_are_reproduced_bit_for_bit() {
    let (deq, q) = check(&load("gguf_py.bin"));
    assert_eq!(
        deq,
        names(muser_quant::DEQUANTIZE_TYPES),
        "every dequantizable type is covered"
    );
    let want_q = names(&[
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::BF16,
        GgmlType::F16,
    ]);
    assert_eq!(q, want_q);
}

#[test]
fn ggml_c_fixtures_are_reproduced_bit_for_bit() {
    let (_, q) = check(&load("ggml_c.bin"));
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::Q8_0,
    ] {
        assert!(q.contains(ty.name()), "{ty} quantization covered");
    }
}
