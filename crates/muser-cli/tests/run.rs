//! `muser run`, `chat`, `tokenize`, `logits` and `bench` end to end on the synthetic demo
//! model, as a fresh machine runs them (no --model, an empty cache directory).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn cache(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-run-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn muser(cache: &PathBuf, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_muser"))
        .args(args)
        .env("MUSER_CACHE_DIR", cache)
        .env_remove("MUSER_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_without_a_model_generates_the_demo_and_is_reproducible() {
    let dir = cache("run");
    let (ok, a, err) = muser(&dir, &["run", "--seed", "7", "-n", "12"], "");
    assert!(ok, "{err}");
    assert!(err.contains("SYNTHETIC demo model"), "{err}");
    assert!(
        err.contains("--model"),
        "says how to use the real model: {err}"
    );
    assert!(err.contains("tok/s"), "reports speeds: {err}");
    assert!(!a.trim().is_empty(), "no text generated");
    let (ok, b, _) = muser(&dir, &["run", "--seed", "7", "-n", "12"], "");
    assert!(ok);
    assert_eq!(a, b, "same seed, different text");
    // The oracle and the fast path both run it.
    for dev in ["cpu-ref", "cpu"] {
        let (ok, text, err) = muser(
            &dir,
            &["run", "--seed", "3", "-n", "5", "--device", dev],
            "",
        );
        assert!(ok && err.contains(dev), "{dev}: {err}");
        assert!(!text.is_empty());
    }
    let (ok, _, err) = muser(&dir, &["run", "--device", "cuda:0"], "");
    assert!(
        !ok && err.contains("CUDA") && err.contains("cuda:0"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn chat_tokenize_logits_and_bench() {
    let dir = cache("chat");
    let (ok, _, err) = muser(
        &dir,
        &["chat", "--seed", "1", "-n", "8", "--temp", "0"],
        "hello there\nand again\n/exit\n",
    );
    assert!(ok, "{err}");
    let (ok, ids, err) = muser(&dir, &["tokenize", "--text", "hi <|eot|>", "--special"], "");
    assert!(ok, "{err}");
    // BOS (2000), then "hi", " ", and <|eot|> as one special token (2008).
    assert!(ids.trim().starts_with("2000,"), "{ids}");
    assert!(ids.trim().ends_with(",2008"), "{ids}");
    let (ok, plain, _) = muser(&dir, &["tokenize", "--text", "hi <|eot|>", "--no-bos"], "");
    assert!(
        ok && !plain.contains("2008") && !plain.starts_with("2000"),
        "{plain}"
    );

    let model = dir.join("muse-glimmer-synthetic-tiny-v1.gguf");
    let npy = dir.join("l.npy");
    let (ok, _, err) = muser(
        &dir,
        &[
            "logits",
            "--model",
            model.to_str().unwrap(),
            "--tokens",
            "2000,5,6,7",
            "--all-positions",
            "--device",
            "cpu-ref",
            "--out",
            npy.to_str().unwrap(),
        ],
        "",
    );
    assert!(ok, "{err}");
    let b = std::fs::read(&npy).unwrap();
    let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
    assert!(String::from_utf8_lossy(&b[10..10 + hlen]).contains("(4, 4048)"));
    assert_eq!(b.len() - 10 - hlen, 4 * 4048 * 4);
    let (ok, _, err) = muser(
        &dir,
        &[
            "logits",
            "--model",
            model.to_str().unwrap(),
            "--tokens",
            "99999",
            "--out",
            npy.to_str().unwrap(),
        ],
        "",
    );
    assert!(!ok && err.contains("99999"), "{err}");

    let (ok, table, err) = muser(
        &dir,
        &[
            "bench",
            "-p",
            "16",
            "-n",
            "4",
            "-r",
            "1",
            "--device",
            "cpu",
            "--streams",
            "1,3",
        ],
        "",
    );
    assert!(ok, "{err}");
    assert!(table.contains("pp16") && table.contains("tg4"), "{table}");
    assert!(
        table.contains("tg4 x1") && table.contains("tg4 x3"),
        "{table}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
