//! The official `openai` Python client against `muser serve` on a synthetic tiny model (CPU):
//! runs tools/openai/suite.py, which installs the pinned `openai` package from PyPI into a venv
//! under the target directory and exits non-zero on the first failed check.

use std::path::Path;
use std::process::Command;

#[test]
fn official_openai_client_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("openai-suite");
    let out = Command::new("python3")
        .arg(root.join("tools/openai/suite.py"))
        .arg("--muser")
        .arg(env!("CARGO_BIN_EXE_muser"))
        .arg("--workdir")
        .arg(&work)
        .output()
        .expect("python3 must be installed to run the openai client suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "openai suite failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("checks passed"), "{stdout}");
}
