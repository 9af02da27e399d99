#!/usr/bin/env python3
"""Generate muser-quant's dequantization / quantization fixtures from the `gguf` Python package.

Oracle: `gguf.quants.dequantize` / `gguf.quants.quantize` (gguf 0.19.0, numpy), which are
bit-exact ports of ggml's reference C code. Output: crates/muser-quant/tests/fixtures/gguf_py.bin
(format: see quant_fixture_io.py). CI has no Python: the fixture is committed.

Setup (once), from the repository root:

    python3 -m venv tools/reference/.venv
    tools/reference/.venv/bin/pip install gguf==0.19.0 numpy

Run (from anywhere; paths are resolved relative to this file):

    tools/reference/.venv/bin/python tools/reference/gen_quant_fixtures.py

Deterministic: fixed seed, so re-running reproduces the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quant_fixture_io import FixtureWriter, quant_inputs  # noqa: E402

from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES  # noqa: E402
import gguf.quants  # noqa: E402

SEED = 0x4D555345  # "MUSE"

# type -> byte offsets of its f16 scale fields inside one block
F16_FIELDS: dict[str, list[int]] = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0],
}


def random_f16_scales(rng: np.random.Generator, n: int) -> np.ndarray:
    """Finite f16 scales: ordinary, negative, tiny (subnormal), large, max, zero and -0."""
    kinds = rng.permutation(np.arange(n) % 7)
    out = np.empty(n, dtype=np.float16)
    for i, k in enumerate(kinds):
        if k == 0:
            v = rng.standard_normal() * 10.0 ** rng.uniform(-4, 0)
        elif k == 1:
            v = -abs(rng.standard_normal()) * 10.0 ** rng.uniform(-3, 1)
        elif k == 2:  # subnormal f16 bit pattern
            out[i] = np.array([rng.integers(1, 0x400) | (rng.integers(0, 2) << 15)], dtype=np.uint16).view(np.float16)[0]
            continue
        elif k == 3:
            v = rng.choice([-1.0, 1.0]) * rng.uniform(1e3, 6e4)
        elif k == 4:
            v = rng.choice([65504.0, -65504.0, 6.1e-5])
        elif k == 5:
            v = rng.choice([0.0, -0.0])
        else:
            v = rng.uniform(1e-3, 1.0)
        out[i] = np.float16(v)
    assert np.all(np.isfinite(out))
    return out


def random_blocks(rng: np.random.Generator, ty: str, n_blocks: int) -> np.ndarray:
    qt = T[ty]
    _, type_size = GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for off in F16_FIELDS[ty]:
        raw[:, off:off + 2] = random_f16_scales(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw


def q8k_blocks(rng: np.random.Generator, n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Q8_K is not in gguf.quants: expected values are d * q in float32."""
    raw = rng.integers(0, 256, size=(n_blocks, 292), dtype=np.uint8)
    ds = np.array([0.0, -0.0, 1e-40, -3e-39, 1e-3, -0.25, 7.5, 1e30, -1e30, 3.4e38, 1.17e-38, 0.0123,
                   -1e-20, 1e20, 2.0, -5e-5], dtype=np.float32)
    ds = np.resize(ds, n_blocks)
    raw[:, 0:4] = ds.view(np.uint8).reshape(n_blocks, 4)
    d = raw[:, 0:4].copy().view(np.float32)  # (n, 1)
    q = raw[:, 4:260].copy().view(np.int8).astype(np.float32)
    return raw, (d * q).astype(np.float32)


def main() -> None:
    rng = np.random.default_rng(SEED)
    w = FixtureWriter()

    # ---- dequantization: random raw blocks -> gguf.quants.dequantize
    for ty in F16_FIELDS:
        n_blocks = 16 if GGML_QUANT_SIZES[T[ty]][0] == 256 else 64
        raw = random_blocks(rng, ty, n_blocks)
        out = gguf.quants.dequantize(raw.ravel(), T[ty])
        w.dequant(ty, "random-blocks", raw, out)

    raw, out = q8k_blocks(rng, 16)
    w.dequant("Q8_K", "random-blocks", raw, out)

    f32_bits = rng.integers(0, 2**32, size=1024, dtype=np.uint64).astype(np.uint32)
    f32_bits[:8] = [0x7FC00000, 0x7F800001, 0xFF800000, 0x7F800000, 0x80000000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF]
    raw = f32_bits.view(np.uint8)
    w.dequant("F32", "random-bits", raw, gguf.quants.dequantize(raw, T.F32))

    f16_bits = rng.integers(0, 2**16, size=2048, dtype=np.uint32).astype(np.uint16)
    f16_bits[:8] = [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x8000, 0x7BFF, 0x03FF]
    raw = f16_bits.view(np.uint8)
    w.dequant("F16", "random-bits", raw, gguf.quants.dequantize(raw, T.F16))

    bf16_bits = rng.integers(0, 2**16, size=2048, dtype=np.uint32).astype(np.uint16)
    bf16_bits[:6] = [0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0001, 0x8000]
    raw = bf16_bits.view(np.uint8)
    w.dequant("BF16", "random-bits", raw, gguf.quants.dequantize(raw, T.BF16))

    # ---- quantization: f32 inputs -> gguf.quants.quantize
    for ty in ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "BF16", "F16"]:
        for label, x in quant_inputs(rng, 32, 8):
            w.quant(ty, label, x, gguf.quants.quantize(x, T[ty]))
    # specials for the float formats (numpy's f16 NaN payload differs from ggml: no NaN here)
    specials = np.array([np.inf, -np.inf, 65504.0, 65519.99, 65520.0, 1e-8, 5.96e-8, 2.98e-8,
                         -2.98e-8, 1e38, -0.0, 0.0, 3.0e-39, 1.0000001, 1.00048828125, 1.0009765625],
                        dtype=np.float32)
    w.quant("F16", "specials", specials, gguf.quants.quantize(specials, T.F16))
    bf_specials = np.concatenate([specials, np.array([np.nan, -np.nan], dtype=np.float32),
                                  np.array([0x7F800001, 0xFFBFFFFF, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000],
                                           dtype=np.uint32).view(np.float32)])
    w.quant("BF16", "specials", bf_specials, gguf.quants.quantize(bf_specials, T.BF16))

    w.write("gguf_py.bin")


if __name__ == "__main__":
    # Edge cases (subnormal / huge inputs) overflow inside gguf.quants on purpose: the results
    # still match ggml's C code, which is what the fixtures pin down.
    with np.errstate(all="ignore"):
        main()
