//! Writes the malformed-GGUF corpus under `tests/corpus/` (run: `cargo run -p muser-gguf --example make_corpus`).
//!
//! Each file is a small valid GGUF broken in one way; `tests/corpus/EXPECTED.txt` maps the
//! file name to fragments (`a|b`: either) its error message must contain.

use std::fmt::Write as _;

use muser_gguf::{Array, GgmlType, GgufBuilder, Value};

/// A valid little file: two keys, two F32 tensors.
fn valid() -> Vec<u8> {
    let mut b = GgufBuilder::new();
    b.kv("general.architecture", Value::String("test".into()))
        .unwrap();
    b.kv("test.list", Value::Array(Array::U32(vec![1, 2, 3])))
        .unwrap();
    b.tensor("a", &[4, 2], GgmlType::F32).unwrap();
    b.tensor("b", &[8], GgmlType::F32).unwrap();
    let a = vec![1u8; 32];
    let bb = vec![2u8; 32];
    b.write_all(Vec::new(), &[&a, &bb]).unwrap()
}

fn header_with(kvs: &[u8], n_kv: u64, tensors: &[u8], n_tensors: u64) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&n_tensors.to_le_bytes());
    out.extend_from_slice(&n_kv.to_le_bytes());
    out.extend_from_slice(kvs);
    out.extend_from_slice(tensors);
    out
}

fn s(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text);
}

fn tensor_info(name: &str, dims: &[u64], ty: u32, offset: u64) -> Vec<u8> {
    let mut t = Vec::new();
    s(&mut t, name.as_bytes());
    t.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        t.extend_from_slice(&d.to_le_bytes());
    }
    t.extend_from_slice(&ty.to_le_bytes());
    t.extend_from_slice(&offset.to_le_bytes());
    t
}

fn pad_with_data(mut v: Vec<u8>, data: usize) -> Vec<u8> {
    let len = v.len().div_ceil(32) * 32;
    v.resize(len + data, 7);
    v
}

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let good = valid();

    cases.push(("empty.gguf", vec![], "not a GGUF file"));
    cases.push((
        "bad_magic.gguf",
        b"GGML\x03\0\0\0".to_vec(),
        "not a GGUF file",
    ));
    let mut v1 = good.clone();
    v1[4] = 1;
    cases.push(("version_1.gguf", v1, "unsupported GGUF version 1"));
    let mut be = good.clone();
    be[4..8].copy_from_slice(&3u32.to_be_bytes());
    cases.push(("big_endian.gguf", be, "big-endian"));
    for cut in [6usize, 20, 30, 60, 100] {
        let name: &'static str = Box::leak(format!("truncated_at_{cut}.gguf").into_boxed_str());
        cases.push((
            name,
            good[..cut.min(good.len())].to_vec(),
            "truncated|claims",
        ));
    }
    cases.push((
        "truncated_data.gguf",
        good[..good.len() - 10].to_vec(),
        "past the end of the file",
    ));

    // Array length 2^60.
    let mut kv = Vec::new();
    s(&mut kv, b"huge.array");
    kv.extend_from_slice(&9u32.to_le_bytes());
    kv.extend_from_slice(&4u32.to_le_bytes());
    kv.extend_from_slice(&(1u64 << 60).to_le_bytes());
    kv.extend_from_slice(&[0u8; 64]);
    cases.push((
        "array_len_2pow60.gguf",
        header_with(&kv, 1, &[], 0),
        "claims 1152921504606846976 entries",
    ));
    // String length 2^62.
    let mut kv = Vec::new();
    s(&mut kv, b"huge.string");
    kv.extend_from_slice(&8u32.to_le_bytes());
    kv.extend_from_slice(&(1u64 << 62).to_le_bytes());
    cases.push((
        "string_len_2pow62.gguf",
        header_with(&kv, 1, &[], 0),
        "truncated",
    ));
    // kv count of 2^63.
    cases.push((
        "kv_count_huge.gguf",
        header_with(&[], 1 << 63, &[], 0),
        "metadata count",
    ));
    cases.push((
        "tensor_count_huge.gguf",
        header_with(&[], 0, &[], u64::MAX),
        "tensor count",
    ));
    // Unknown value type.
    let mut kv = Vec::new();
    s(&mut kv, b"odd.key");
    kv.extend_from_slice(&77u32.to_le_bytes());
    kv.extend_from_slice(&[0u8; 8]);
    cases.push((
        "unknown_value_type.gguf",
        header_with(&kv, 1, &[], 0),
        "unknown value type id 77",
    ));
    // Non-UTF-8 key.
    let mut kv = Vec::new();
    s(&mut kv, b"bad\xff\xfekey");
    kv.extend_from_slice(&4u32.to_le_bytes());
    kv.extend_from_slice(&1u32.to_le_bytes());
    cases.push((
        "non_utf8_key.gguf",
        header_with(&kv, 1, &[], 0),
        "not valid UTF-8",
    ));
    // Duplicate key.
    let mut kv = Vec::new();
    for _ in 0..2 {
        s(&mut kv, b"dup.key");
        kv.extend_from_slice(&4u32.to_le_bytes());
        kv.extend_from_slice(&1u32.to_le_bytes());
    }
    cases.push((
        "duplicate_key.gguf",
        header_with(&kv, 2, &[], 0),
        "duplicate metadata key \"dup.key\"",
    ));
    // Deep nesting.
    let mut kv = Vec::new();
    s(&mut kv, b"deep");
    kv.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..20 {
        kv.extend_from_slice(&9u32.to_le_bytes());
        kv.extend_from_slice(&1u64.to_le_bytes());
    }
    kv.extend_from_slice(&[0u8; 16]);
    cases.push((
        "nesting_too_deep.gguf",
        header_with(&kv, 1, &[], 0),
        "nested deeper",
    ));
    // Bad alignment.
    let mut kv = Vec::new();
    s(&mut kv, b"general.alignment");
    kv.extend_from_slice(&4u32.to_le_bytes());
    kv.extend_from_slice(&24u32.to_le_bytes());
    cases.push((
        "alignment_24.gguf",
        header_with(&kv, 1, &[], 0),
        "general.alignment = 24",
    ));
    // Tensor problems.
    let t = tensor_info("x", &[1 << 40, 1 << 40], 0, 0);
    cases.push((
        "dim_overflow.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "overflow",
    ));
    let t = tensor_info("x", &[4, 4, 4, 4, 4], 0, 0);
    cases.push((
        "five_dims.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "5 dimensions",
    ));
    let t = tensor_info("x", &[8], 4, 0);
    cases.push((
        "unknown_tensor_type.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "unknown tensor type id 4",
    ));
    let t = tensor_info("x", &[100], 12, 0);
    cases.push((
        "not_block_aligned.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "not a multiple of Q4_K's block size 256",
    ));
    let t = tensor_info("x", &[8], 0, 4);
    cases.push((
        "misaligned_offset.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "not a multiple of the alignment",
    ));
    let t = tensor_info("x", &[1024], 0, 0);
    cases.push((
        "tensor_past_end.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "past the end of the file",
    ));
    let t = tensor_info("x", &[8], 0, u64::MAX - 31);
    cases.push((
        "tensor_offset_wraps.gguf",
        pad_with_data(header_with(&[], 0, &t, 1), 64),
        "past the end of the file",
    ));
    let mut t = tensor_info("x", &[16], 0, 0);
    t.extend(tensor_info("y", &[16], 0, 32));
    cases.push((
        "overlapping_tensors.gguf",
        pad_with_data(header_with(&[], 0, &t, 2), 128),
        "overlap",
    ));
    let mut t = tensor_info("x", &[8], 0, 0);
    t.extend(tensor_info("x", &[8], 0, 32));
    cases.push((
        "duplicate_tensor.gguf",
        pad_with_data(header_with(&[], 0, &t, 2), 128),
        "duplicate tensor name \"x\"",
    ));

    let mut manifest = String::from("# file<TAB>fragment of the expected error message\n");
    for (name, bytes, fragment) in &cases {
        std::fs::write(dir.join(name), bytes).unwrap();
        writeln!(manifest, "{name}\t{fragment}").unwrap();
    }
    std::fs::write(dir.join("EXPECTED.txt"), manifest).unwrap();
    println!("wrote {} files to {}", cases.len(), dir.display());
}
