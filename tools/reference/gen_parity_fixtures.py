#!/usr/bin/env python3
"""Full-logit parity fixtures from llama.cpp for synthetic Muse Glimmer GGUFs.

For each case below: generate the synthetic model with `muser synth` (deterministic, so the
Rust test regenerates the identical file from the same arguments), evaluate a fixed token
sequence in llama.cpp (CPU, `llama-cpp-python` 0.3.36, flash attention off, f16 KV cache,
every position's logits), and store token ids + logits. The Rust test
`crates/muser-cli/tests/parity.rs` compares Muser's backends against them; CI never runs this.

Set-up (llama.cpp builds from source, ~25 min on 2 cores; pip caches the wheel):
    python3 -m venv tools/reference/.venv
    tools/reference/.venv/bin/pip install gguf==0.19.0 numpy llama-cpp-python==0.3.36
Run from the repository root after `cargo build --release`:
    tools/reference/.venv/bin/python tools/reference/gen_parity_fixtures.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "muser-cli", "tests", "fixtures", "parity")
MUSER = os.path.join(ROOT, "target", "release", "muser")

# Small, smooth models (post-norm weights 0.2, unit-variance projections, output gain 4):
# hidden 256, 4 layers (3 sliding + 1 full), 256 byte tokens + 2,048 specials, window 8 so
# that the 24-token sequence wraps every ring. Every file has tiny embedding rows (every 97th
# id) and a tiny layer-0 attn_output, so both norm epsilons matter.
BASE = ["--preset", "tiny", "--vocab", "256", "--window", "8", "--layers", "4"]
CASES = {
    # Meta-style: scalar pattern, Q4_K_M mix, head_dim 64, GQA 4, rope bases differ.
    "q4km_scalar_hd64_gqa4": ["--heads", "4", "--kv-heads", "1", "--head-dim", "64",
                              "--rope-base-swa", "10000"],
    # HF-converter style: bool pattern, no softcap key (llama.cpp: 30), head_dim 128, GQA 16.
    "q5k_bool_nocap_hd128_gqa16": ["--type", "Q5_K", "--pattern", "bool", "--no-softcap",
                                   "--heads", "16", "--kv-heads", "1", "--head-dim", "128",
                                   "--rope-base-swa", "20000"],
    "q6k_hd64_gqa4": ["--type", "Q6_K", "--heads", "8", "--kv-heads", "2", "--head-dim", "64"],
    "q8_0_hd128_gqa16_no_swa_base": ["--type", "Q8_0", "--heads", "16", "--kv-heads", "1",
                                     "--head-dim", "128", "--no-rope-base-swa",
                                     "--rope-base", "300000"],
    "f16_hd64_gqa4": ["--type", "F16", "--heads", "4", "--kv-heads", "1", "--head-dim", "64"],
    "bf16_hd64_gqa4_bool": ["--type", "BF16", "--pattern", "bool", "--heads", "4",
                            "--kv-heads", "1", "--head-dim", "64"],
}
N_TOKENS = 24


def tokens_for(name, n_vocab):
    rng = np.random.default_rng(sum(map(ord, name)))
    ids = rng.integers(0, 256, size=N_TOKENS)
    ids[0] = 256  # <|begin_of_text|>
    ids[5] = 96   # a tiny embedding row (every 97th id is scaled by 1e-3)
    ids[9] = 256 + 8  # <|eot|>
    return [int(i) for i in ids]


def main():
    from llama_cpp import Llama

    if not os.path.exists(MUSER):
        sys.exit("build first: cargo build --release")
    os.makedirs(OUT, exist_ok=True)
    manifest = {"n_tokens": N_TOKENS, "generator": "llama-cpp-python 0.3.36, CPU, flash_attn off, "
                "f16 KV cache, logits_all", "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in CASES.items():
            args = BASE + extra
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run([MUSER, "synth", *args, "--out", path, "--quiet"], check=True)
            llm = Llama(model_path=path, n_ctx=64, n_batch=64, n_ubatch=64, n_threads=2,
                        logits_all=True, flash_attn=False, verbose=False)
            n_vocab = llm.n_vocab()
            toks = tokens_for(name, n_vocab)
            llm.reset()
            llm.eval(toks)
            logits = np.array(llm.scores[:N_TOKENS], dtype=np.float32)
            assert logits.shape == (N_TOKENS, n_vocab) and np.isfinite(logits).all()
            logits.tofile(os.path.join(OUT, name + ".f32"))
            manifest["cases"].append({"name": name, "synth_args": args, "tokens": toks,
                                      "n_vocab": n_vocab, "logits": name + ".f32"})
            top = logits[-1].argsort()[::-1][:3]
            print(f"{name}: vocab {n_vocab}, last-position top-3 {top.tolist()} "
                  f"{logits[-1][top].round(4).tolist()}, std {logits.std():.4f}")
            del llm
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
