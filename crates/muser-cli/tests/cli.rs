//! The `muser` binary end to end on the tiny preset: synth → inspect (text, JSON) → tensor.

use std::path::PathBuf;
use std::process::Command;

fn muser(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_muser"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-cli-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn synth_inspect_tensor() {
    let dir = temp_dir("synth");
    let model = dir.join("tiny.gguf");
    let m = model.to_str().unwrap();
    let (ok, _, err) = muser(&["synth", "--preset", "tiny", "--out", m, "--quiet"]);
    assert!(ok, "{err}");
    assert!(err.contains("MB/s"), "synth reports its rate: {err}");

    let (ok, text, err) = muser(&["inspect", m]);
    assert!(ok, "{err}");
    for needle in [
        "architecture: muse-glimmer",
        "block_count",
        "model \"gpt2\"",
        "pre \"llama-bpe\"",
        "vocab 4048",
        "bos 2000 \"<|begin_of_text|>\"",
        "chat template: ",
        "blk.0.attn_q.weight",
        "Q6_K",
        "bits per weight",
    ] {
        assert!(
            text.contains(needle),
            "inspect output lacks {needle:?}:\n{text}"
        );
    }

    let (ok, json, err) = muser(&["inspect", "--json", m]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["hyperparameters"]["embedding_length"], 256);
    assert_eq!(v["tokenizer"]["vocab_size"], 4048);
    assert_eq!(v["tensors"].as_array().unwrap().len(), 59);
    let params = v["totals"]["params"].as_u64().unwrap();
    assert_eq!(params, 4_698_880);

    let npy = dir.join("q.npy");
    let (ok, _, err) = muser(&[
        "tensor",
        m,
        "blk.1.attn_k.weight",
        "--out",
        npy.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let bytes = std::fs::read(&npy).unwrap();
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
    assert!(header.contains("'shape': (128, 256)"), "{header}");
    let values: Vec<f32> = bytes[10 + hlen..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values.len(), 128 * 256);
    let f = muser_gguf::GgufFile::open(&model).unwrap();
    let info = f.tensor_info("blk.1.attn_k.weight").unwrap();
    let expected = muser_quant::dequantize_tensor(info, f.tensor_data(info).unwrap()).unwrap();
    assert!(values == expected);

    let (ok, _, err) = muser(&["tensor", m, "no.such.tensor", "--out", "/dev/null"]);
    assert!(!ok && err.contains("no.such.tensor"), "{err}");
    let (ok, _, err) = muser(&["inspect", "/nonexistent.gguf"]);
    assert!(!ok && err.contains("/nonexistent.gguf"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_files_give_errors_not_panics() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../muser-gguf/tests/corpus");
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "gguf") {
            let (ok, _, err) = muser(&["inspect", p.to_str().unwrap()]);
            assert!(!ok, "{} accepted", p.display());
            assert!(err.starts_with("error: "), "{}: {err}", p.display());
            assert!(!err.contains("panicked"), "{}: {err}", p.display());
        }
    }
}

#[test]
fn unsupported_tensor_types_are_refused_by_name() {
    let dir = temp_dir("unsupported");
    let path = dir.join("iq2.gguf");
    let mut b = muser_gguf::GgufBuilder::new();
    b.tensor(
        "blk.0.attn_q.weight",
        &[256, 2],
        muser_gguf::GgmlType::IQ2_XXS,
    )
    .unwrap();
    let data = vec![0u8; 2 * 66];
    let bytes = b.write_all(Vec::new(), &[&data]).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let p = path.to_str().unwrap();
    // inspect describes any known type …
    let (ok, text, err) = muser(&["inspect", p]);
    assert!(ok && text.contains("IQ2_XXS"), "{err}");
    // … but the engine refuses to compute with it, naming tensor and type.
    let (ok, _, err) = muser(&["tensor", p, "blk.0.attn_q.weight", "--out", "/dev/null"]);
    assert!(!ok, "IQ2_XXS tensor was dequantized");
    assert!(
        err.contains("blk.0.attn_q.weight") && err.contains("IQ2_XXS"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
