//! Fuzz target: the GGUF header parser must return `Ok` or a typed error, never panic, and
//! every tensor it accepts must lie inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = muser_gguf::parse_header(data) {
        for t in &h.tensors {
            let end = t.file_offset + t.n_bytes;
            assert!(end <= data.len() as u64, "tensor {} past the end", t.name);
            assert_eq!(t.file_offset % h.alignment, 0);
        }
        for (k, _) in &h.metadata {
            assert!(h.get(k).is_some());
        }
    }
});
