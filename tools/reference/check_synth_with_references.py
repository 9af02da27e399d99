#!/usr/bin/env python3
"""Reads synthetic Muse Glimmer GGUFs with the `gguf` package and runs them in llama.cpp.

Acceptance check for `muser synth` (issue: foundation): the file must be read without error by
`gguf.GGUFReader`, and llama.cpp (built by the `llama-cpp-python` package) must load the tiny
preset, tokenize text and evaluate a few tokens to finite, spread logits.

Set-up (once; building llama.cpp takes ~25 min on 2 cores, pip caches the wheel):
    python3 -m venv tools/reference/.venv
    tools/reference/.venv/bin/pip install gguf==0.19.0 numpy llama-cpp-python==0.3.36
Run:
    tools/reference/.venv/bin/python tools/reference/check_synth_with_references.py FILE.gguf...
"""
import sys

import numpy as np
import gguf


def check_gguf_py(path):
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"]
    arch = bytes(arch.parts[arch.data[0]]).decode()
    n_params = 0
    for t in r.tensors:
        n_params += int(np.prod(t.shape))
        # Touch the data of every tensor: gguf-py maps it with numpy views.
        assert t.data.size > 0, t.name
    types = sorted({t.tensor_type.name for t in r.tensors})
    print(f"gguf-py: {path}: arch={arch} tensors={len(r.tensors)} keys={len(r.fields)} "
          f"params={n_params} types={types}")


def check_llama_cpp(path):
    from llama_cpp import Llama

    llm = Llama(model_path=path, n_ctx=256, n_threads=2, n_batch=64, logits_all=True,
                verbose=False)
    text = b"Hello world, the quick brown fox 12345."
    toks = llm.tokenize(text, add_bos=True, special=False)
    print(f"llama.cpp: n_vocab={llm.n_vocab()} tokens for {text!r}: {toks}")
    detok = llm.detokenize(toks[1:])
    print(f"llama.cpp: detokenize round trip: {detok!r} ({'ok' if detok == text else 'DIFFERS'})")
    llm.eval(toks)
    logits = np.array(llm.scores[: len(toks)], dtype=np.float32)
    assert np.isfinite(logits).all(), "non-finite logits"
    last = logits[-1]
    top = np.argsort(-last)[:5]
    print(f"llama.cpp: evaluated {len(toks)} tokens; last-position logits: min {last.min():.4f} "
          f"max {last.max():.4f} std {last.std():.4f}; top-5 ids {top.tolist()} "
          f"values {[round(float(last[i]), 4) for i in top]}")
    assert last.std() > 1e-3, "logits are all equal"
    out = llm.create_completion("The", max_tokens=8, temperature=0.0)
    print(f"llama.cpp: greedy continuation of 'The': {out['choices'][0]['text']!r}")


def main():
    paths = sys.argv[1:]
    if not paths:
        print(__doc__)
        sys.exit(2)
    for p in paths:
        check_gguf_py(p)
    check_llama_cpp(paths[0])
    print("OK")


if __name__ == "__main__":
    main()
