//! Minimal `.npy` (format 1.0) writer for little-endian f32 arrays.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `data` with numpy `shape` (C order) to `path`.
pub fn write_f32(path: &Path, shape: &[u64], data: &[f32]) -> Result<()> {
    let n: u64 = shape.iter().product();
    anyhow::ensure!(
        n == data.len() as u64,
        "shape {shape:?} does not match {} values",
        data.len()
    );
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_str = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_str}, }}");
    // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(&out)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_is_aligned_and_parsable() {
        let dir = std::env::temp_dir().join(format!("muser-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.npy");
        super::write_f32(&p, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let b = std::fs::read(&p).unwrap();
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let h = std::str::from_utf8(&b[10..10 + hlen]).unwrap();
        assert!(h.contains("'shape': (2, 3)"));
        assert_eq!(
            f32::from_le_bytes(b[10 + hlen..14 + hlen].try_into().unwrap()),
            1.0
        );
        assert!(super::write_f32(&p, &[4], &[1.0]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
