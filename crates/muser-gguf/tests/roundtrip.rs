//! Writer → reader round trips: every value type, nested arrays, alignment, versions, mmap.

use muser_gguf::{Array, GgmlType, GgufBuilder, GgufFile, Value};

fn every_value() -> Vec<(&'static str, Value)> {
    vec![
        ("v.u8", Value::U8(200)),
        ("v.i8", Value::I8(-100)),
        ("v.u16", Value::U16(60000)),
        ("v.i16", Value::I16(-30000)),
        ("v.u32", Value::U32(4_000_000_000)),
        ("v.i32", Value::I32(-2_000_000_000)),
        ("v.f32", Value::F32(1e-5)),
        ("v.bool", Value::Bool(true)),
        ("v.string", Value::String("héllo ✓ <|eot|>".into())),
        ("v.u64", Value::U64(u64::MAX)),
        ("v.i64", Value::I64(i64::MIN)),
        ("v.f64", Value::F64(0.196_116_135_138_184_04)),
        ("a.u8", Value::Array(Array::U8(vec![1, 2, 255]))),
        ("a.i8", Value::Array(Array::I8(vec![-1, 2]))),
        ("a.u16", Value::Array(Array::U16(vec![1, 65535]))),
        ("a.i16", Value::Array(Array::I16(vec![-5]))),
        ("a.u32", Value::Array(Array::U32(vec![]))),
        ("a.i32", Value::Array(Array::I32(vec![3, 1, 4, 1, 5]))),
        ("a.f32", Value::Array(Array::F32(vec![0.5, -0.25]))),
        (
            "a.bool",
            Value::Array(Array::Bool(vec![true, true, true, false])),
        ),
        (
            "a.string",
            Value::Array(Array::String(vec!["Ġthe".into(), "".into(), "日本".into()])),
        ),
        ("a.u64", Value::Array(Array::U64(vec![u64::MAX]))),
        ("a.i64", Value::Array(Array::I64(vec![-7]))),
        ("a.f64", Value::Array(Array::F64(vec![1.5]))),
        (
            "a.nested",
            Value::Array(Array::Array(vec![
                Array::U32(vec![1, 2]),
                Array::String(vec!["x".into()]),
                Array::Array(vec![Array::Bool(vec![false])]),
            ])),
        ),
    ]
}

fn build(version: u32, alignment: Option<u32>) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut b = GgufBuilder::new().version(version).unwrap();
    if let Some(a) = alignment {
        b.alignment(a).unwrap();
    }
    for (k, v) in every_value() {
        b.kv(k, v).unwrap();
    }
    let specs: [(&str, &[u64], GgmlType); 4] = [
        ("token_embd.weight", &[256, 3], GgmlType::Q4_K),
        ("norm.weight", &[7], GgmlType::F32),
        ("q8", &[64, 2, 1], GgmlType::Q8_0),
        ("empty", &[0, 5], GgmlType::F16),
    ];
    let mut datas = Vec::new();
    for (i, (name, dims, ty)) in specs.iter().enumerate() {
        b.tensor(*name, dims, *ty).unwrap();
        let n = b.tensors()[i].n_bytes as usize;
        datas.push((0..n).map(|j| (j * 31 + i * 7) as u8).collect::<Vec<u8>>());
    }
    let refs: Vec<&[u8]> = datas.iter().map(|d| d.as_slice()).collect();
    let file = b.write_all(Vec::new(), &refs).unwrap();
    (file, datas)
}

#[test]
fn write_then_read_is_identical() {
    for (version, alignment) in [(3, None), (2, None), (3, Some(64)), (3, Some(1))] {
        let (file, datas) = build(version, alignment);
        let h = muser_gguf::parse_header(&file).unwrap();
        assert_eq!(h.version, version);
        assert_eq!(h.alignment, u64::from(alignment.unwrap_or(32)));
        let expected = every_value();
        let skip = usize::from(alignment.is_some());
        assert_eq!(h.metadata.len(), expected.len() + skip);
        for ((k, v), (ek, ev)) in h.metadata[skip..].iter().zip(&expected) {
            assert_eq!(k, ek);
            assert_eq!(v, ev, "{k}");
        }
        assert_eq!(h.tensors.len(), 4);
        for (t, d) in h.tensors.iter().zip(&datas) {
            assert_eq!(t.file_offset % h.alignment, 0);
            let s = t.file_offset as usize;
            assert!(
                &file[s..s + t.n_bytes as usize] == d.as_slice(),
                "{}",
                t.name
            );
        }
        assert_eq!(h.tensor("q8").unwrap().dims, vec![64, 2, 1]);
        // Writing the parsed header again gives the same bytes.
        let mut b = GgufBuilder::new().version(version).unwrap();
        for (k, v) in &h.metadata {
            b.kv(k.clone(), v.clone()).unwrap();
        }
        for t in &h.tensors {
            b.tensor(t.name.clone(), &t.dims, t.ty).unwrap();
        }
        let refs: Vec<&[u8]> = datas.iter().map(|d| d.as_slice()).collect();
        assert!(
            b.write_all(Vec::new(), &refs).unwrap() == file,
            "rewrite differs"
        );
    }
}

#[test]
fn mmap_views_are_zero_copy_and_typed_getters_work() {
    let (file, datas) = build(3, None);
    let dir = std::env::temp_dir().join(format!("muser-gguf-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rt.gguf");
    std::fs::write(&path, &file).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.tensor_bytes("norm.weight").unwrap(), datas[1].as_slice());
    let base = f.bytes().as_ptr() as usize;
    let view = f.tensor_bytes("q8").unwrap().as_ptr() as usize;
    assert_eq!(
        view - base,
        f.tensor_info("q8").unwrap().file_offset as usize
    );
    let h = f.header();
    assert_eq!(h.get_u64("v.u32").unwrap(), Some(4_000_000_000));
    assert_eq!(h.get_f32("v.f64").unwrap(), Some(0.196_116_14));
    assert!(h.get_u64("v.string").is_err());
    assert_eq!(h.get_u64("absent").unwrap(), None);
    assert!(f.tensor_bytes("nope").is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_refuses_bad_declarations() {
    let mut b = GgufBuilder::new();
    b.kv("x", Value::U8(1)).unwrap();
    assert!(b.kv("x", Value::U8(2)).is_err());
    assert!(b.tensor("q", &[100], GgmlType::Q4_K).is_err());
    b.tensor("t", &[4], GgmlType::F32).unwrap();
    assert!(b.tensor("t", &[4], GgmlType::F32).is_err());
    assert!(b.alignment(64).is_err());
    let mut w = b.clone().start(Vec::new()).unwrap();
    w.write(&[0u8; 8]).unwrap();
    assert!(w.finish().is_err());
    let mut w = b.start(Vec::new()).unwrap();
    assert!(w.write(&[0u8; 17]).is_err());
}
