//! Reader for the committed fixture files (format documented in
//! tools/reference/quant_fixture_io.py) and bit-exact comparison helpers.

#![allow(dead_code)]

use std::path::PathBuf;

use muser_quant::GgmlType;

pub enum Kind {
    /// Encoded bytes -> expected f32 values.
    Dequant,
    /// f32 inputs -> expected encoded bytes.
    Quant,
}

pub struct Record {
    pub kind: Kind,
    pub ty: GgmlType,
    pub label: String,
    pub floats: Vec<f32>,
    pub bytes: Vec<u8>,
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn string(&mut self) -> String {
        let n = self.u8() as usize;
        String::from_utf8(self.take(n).to_vec()).unwrap()
    }
    fn floats(&mut self, n: usize) -> Vec<f32> {
        self.take(4 * n)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn load(name: &str) -> Vec<Record> {
    let path = fixture_path(name);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut c = Cursor {
        data: &data,
        pos: 0,
    };
    assert_eq!(c.take(4), b"MQFX", "{name}: bad magic");
    assert_eq!(c.u32(), 1, "{name}: version");
    let n = c.u32();
    let mut out = Vec::new();
    for _ in 0..n {
        let kind = match c.u8() {
            0 => Kind::Dequant,
            1 => Kind::Quant,
            k => panic!("{name}: bad record kind {k}"),
        };
        let ty_name = c.string();
        let ty = GgmlType::from_name(&ty_name).unwrap_or_else(|| panic!("type {ty_name}"));
        let label = c.string();
        let n_elements = c.u32() as usize;
        let n_bytes = c.u32() as usize;
        let (floats, bytes) = match kind {
            Kind::Dequant => {
                let b = c.take(n_bytes).to_vec();
                (c.floats(n_elements), b)
            }
            Kind::Quant => {
                let f = c.floats(n_elements);
                (f, c.take(n_bytes).to_vec())
            }
        };
        out.push(Record {
            kind,
            ty,
            label,
            floats,
            bytes,
        });
    }
    assert_eq!(c.pos, data.len(), "{name}: trailing bytes");
    out
}

/// Bit equality, with any NaN equal to any NaN.
pub fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Panics with the first differing index if `got` and `want` are not bit-identical.
pub fn assert_f32_identical(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| !same_f32(got[i], want[i]))
        .collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{what}: {} of {} values differ; first at {i}: got {:e} ({:#010x}), want {:e} ({:#010x})",
            bad.len(),
            got.len(),
            got[i],
            got[i].to_bits(),
            want[i],
            want[i].to_bits()
        );
    }
}

/// Panics with the first differing block if `got != want`.
pub fn assert_bytes_identical(what: &str, ty: GgmlType, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let ts = ty.type_size();
        let blk = i / ts;
        let n_bad_blocks = got
            .chunks(ts)
            .zip(want.chunks(ts))
            .filter(|(a, b)| a != b)
            .count();
        panic!(
            "{what}: {n_bad_blocks} blocks differ; first at byte {i} (block {blk}, offset {}):\n got  {:02x?}\n want {:02x?}",
            i % ts,
            &got[blk * ts..(blk + 1) * ts],
            &want[blk * ts..(blk + 1) * ts]
        );
    }
}
