//! Every file of the malformed corpus is refused with the expected typed error, never a panic.

use std::path::Path;

#[test]
fn corpus_files_are_refused_with_named_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let manifest = std::fs::read_to_string(dir.join("EXPECTED.txt")).unwrap();
    let mut n = 0;
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let (name, fragment) = line.split_once('\t').unwrap();
        let path = dir.join(name);
        let bytes = std::fs::read(&path).unwrap();
        let from_bytes = muser_gguf::parse_header(&bytes);
        let from_file = muser_gguf::GgufFile::open(&path);
        let err = match (from_bytes, from_file) {
            (Err(e), Err(f)) => {
                assert_eq!(e.to_string(), f.to_string(), "{name}");
                e.to_string()
            }
            _ => panic!("{name}: malformed file was accepted"),
        };
        assert!(
            fragment.split('|').any(|f| err.contains(f)),
            "{name}: error {err:?} does not mention {fragment:?}"
        );
        n += 1;
    }
    assert!(n >= 25, "corpus has only {n} files");
}

/// Every prefix of a valid file is either refused cleanly or (for the full file) accepted.
#[test]
fn every_truncation_of_a_valid_file_is_refused() {
    let mut b = muser_gguf::GgufBuilder::new();
    b.kv("k.str", muser_gguf::Value::String("hello".into()))
        .unwrap();
    b.kv(
        "k.arr",
        muser_gguf::Value::Array(muser_gguf::Array::String(vec!["a".into(), "bc".into()])),
    )
    .unwrap();
    b.tensor("t", &[32, 2], muser_gguf::GgmlType::Q8_0).unwrap();
    let data = vec![3u8; 68];
    let file = b.write_all(Vec::new(), &[&data]).unwrap();
    assert!(muser_gguf::parse_header(&file).is_ok());
    for cut in 0..file.len() {
        assert!(
            muser_gguf::parse_header(&file[..cut]).is_err(),
            "prefix of {cut} bytes accepted"
        );
    }
}

/// Flipping any single byte of the header never panics.
#[test]
fn single_byte_corruptions_never_panic() {
    let mut b = muser_gguf::GgufBuilder::new();
    b.kv("general.alignment", muser_gguf::Value::U32(64))
        .unwrap();
    b.kv(
        "nested",
        muser_gguf::Value::Array(muser_gguf::Array::Array(vec![
            muser_gguf::Array::I16(vec![1, -2]),
            muser_gguf::Array::Bool(vec![true]),
        ])),
    )
    .unwrap();
    b.tensor("t", &[256], muser_gguf::GgmlType::Q4_K).unwrap();
    let data = vec![5u8; 144];
    let file = b.write_all(Vec::new(), &[&data]).unwrap();
    let header_len = file.len() - 144;
    for i in 0..header_len {
        for v in [0u8, 0xff, 0x80, 1] {
            let mut f = file.clone();
            f[i] = v;
            let _ = muser_gguf::parse_header(&f);
        }
    }
}
