#!/usr/bin/env python3
"""Generate muser-quant's fixtures from ggml's own C reference code (libggml-base).

Oracle: ggml's reference quantizers through `ggml_quantize_chunk(type, src, dst, 0, nrows,
n_per_row, imatrix=NULL)`, which without an importance matrix calls `quantize_row_*_ref`
(Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16), plus the exported
`quantize_row_q8_K_ref` (Q8_K is not in ggml_quantize_chunk), and ggml's `dequantize_row_*`
on random blocks as a second dequantization oracle next to gen_quant_fixtures.py.
Output: crates/muser-quant/tests/fixtures/ggml_c.bin (format: see quant_fixture_io.py).

Setup (once), from the repository root; llama-cpp-python ships libggml-base.so:

    python3 -m venv tools/reference/.venv
    tools/reference/.venv/bin/pip install gguf==0.19.0 numpy llama-cpp-python==0.3.36

Run (from anywhere):

    tools/reference/.venv/bin/python tools/reference/gen_ggml_quant_fixtures.py [--lib PATH/libggml-base.so]

Without --lib the library is found inside the installed `llama_cpp` package. Deterministic seed.
Requires a little-endian x86-64 build without FMA contraction in ggml-base (the default
llama-cpp-python wheel build; checked: libggml-base contains no vfmadd instructions).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quant_fixture_io import FixtureWriter, quant_inputs  # noqa: E402

SEED = 0x6767_6D6C  # "ggml"

# ggml_type ids, block sizes and bytes per block (ggml.h / ggml.c type_traits)
TYPES = {
    "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110),
    "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "IQ4_NL": (20, 32, 18), "IQ4_XS": (23, 256, 136), "BF16": (30, 1, 2),
}
# byte offsets of f16 scale fields (set to finite values in random blocks)
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0], "Q2_K": [80, 82],
    "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208], "IQ4_NL": [0], "IQ4_XS": [0],
}

F32P = ctypes.POINTER(ctypes.c_float)


def find_lib(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        sys.exit("llama_cpp not installed; pip install llama-cpp-python==0.3.36 or pass --lib")
    return Path(spec.origin).parent / "lib" / "libggml-base.so"


class Ggml:
    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))
        q = self.lib.ggml_quantize_chunk
        q.argtypes = [ctypes.c_int, F32P, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, F32P]
        q.restype = ctypes.c_size_t
        self.lib.quantize_row_q8_K_ref.argtypes = [F32P, ctypes.c_void_p, ctypes.c_int64]
        self.lib.quantize_row_q8_K_ref.restype = None

    def quantize(self, ty: str, x: np.ndarray) -> np.ndarray:
        tid, bs, ts = TYPES[ty]
        x = np.ascontiguousarray(x, dtype=np.float32)
        assert x.size % bs == 0
        dst = np.zeros(x.size // bs * ts, dtype=np.uint8)  # zeroed: Q8_K leaves bsums of zero blocks as found
        src = x.ctypes.data_as(F32P)
        if ty == "Q8_K":
            self.lib.quantize_row_q8_K_ref(src, dst.ctypes.data, x.size)
        else:
            n = self.lib.ggml_quantize_chunk(tid, src, dst.ctypes.data, 0, 1, x.size, None)
            assert n == dst.size, (ty, n, dst.size)
        return dst

    def dequantize(self, ty: str, raw: np.ndarray) -> np.ndarray:
        _, bs, ts = TYPES[ty]
        raw = np.ascontiguousarray(raw, dtype=np.uint8).ravel()
        n = raw.size // ts * bs
        out = np.zeros(n, dtype=np.float32)
        name = {"F16": "ggml_fp16_to_fp32_row", "BF16": "ggml_bf16_to_fp32_row"}.get(ty, f"dequantize_row_{ty.lower().replace('_k', '_K')}")
        fn = getattr(self.lib, name)
        fn.argtypes = [ctypes.c_void_p, F32P, ctypes.c_int64]
        fn.restype = None
        fn(raw.ctypes.data, out.ctypes.data_as(F32P), n)
        return out


def random_f16(rng: np.random.Generator, n: int) -> np.ndarray:
    """Finite f16 scales of every kind: ordinary, negative, subnormal, large, zero, -0."""
    bits = np.empty(n, dtype=np.uint16)
    for i in range(n):
        k = i % 6
        if k == 2:
            bits[i] = int(rng.integers(1, 0x400)) | (int(rng.integers(0, 2)) << 15)
            continue
        v = [rng.standard_normal() * 10.0 ** rng.uniform(-4, 0), -rng.uniform(1e-3, 2.0), 0.0,
             rng.choice([-1.0, 1.0]) * rng.uniform(1e3, 65504.0), rng.choice([0.0, -0.0]),
             rng.uniform(1e-5, 1e-1)][k]
        bits[i] = np.array([v], dtype=np.float16).view(np.uint16)[0]
    return rng.permutation(bits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", help="path to libggml-base.so (default: from the llama_cpp package)")
    args = ap.parse_args()
    ggml = Ggml(find_lib(args.lib))
    rng = np.random.default_rng(SEED)
    w = FixtureWriter()

    # ---- ggml's reference quantizers
    for ty in ["Q4_K", "Q5_K", "Q6_K", "Q8_K", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]:
        bs = TYPES[ty][1]
        cases = quant_inputs(rng, bs, 8)
        n_w = 32 * 256 // bs if bs == 256 else 64
        cases.append(("heavy-tailed", (rng.standard_t(3, bs * n_w) * 0.01).astype(np.float32)))
        cases.append(("huge", (rng.standard_normal(bs * 2) * 1e18).astype(np.float32)))
        for label, x in cases:
            w.quant(ty, label, x, ggml.quantize(ty, x))

    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 65504.0, 65519.99, 65520.0, 5.96e-8, 2.98e-8,
                         -2.98e-8, 1e38, -0.0, 0.0, 3.0e-39, 1.00048828125, 1.0009765625], dtype=np.float32)
    nan_bits = np.array([0x7F800001, 0xFFBFFFFF, 0x7FC00001, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000,
                         0x33000000], dtype=np.uint32).view(np.float32)
    for ty in ["F16", "BF16"]:
        for label, x in quant_inputs(rng, 32, 8):
            w.quant(ty, label, x, ggml.quantize(ty, x))
        x = np.concatenate([specials, nan_bits])
        w.quant(ty, "specials-nan", x, ggml.quantize(ty, x))

    # ---- ggml's dequantizers on random blocks (second oracle next to gguf-py)
    for ty, fields in F16_FIELDS.items():
        _, bs, ts = TYPES[ty]
        n_blocks = 8 if bs == 256 else 32
        raw = rng.integers(0, 256, size=(n_blocks, ts), dtype=np.uint8)
        for off in fields:
            raw[:, off:off + 2] = random_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
        w.dequant(ty, "random-blocks", raw, ggml.dequantize(ty, raw))
    raw = rng.integers(0, 256, size=(8, 292), dtype=np.uint8)
    raw[:, 0:4] = np.array([1e-3, -2.5, 0.0, 1e-40, 3e38, -7e-20, 1.0, 12.0], dtype=np.float32).view(np.uint8).reshape(8, 4)
    w.dequant("Q8_K", "random-blocks", raw, ggml.dequantize("Q8_K", raw))
    for ty in ["F16", "BF16"]:
        raw = rng.integers(0, 256, size=2048, dtype=np.uint8)
        raw[:4] = [0x01, 0x7C, 0x01, 0xFF]  # signalling NaNs
        w.dequant(ty, "random-bits", raw, ggml.dequantize(ty, raw))

    w.write("ggml_c.bin")


if __name__ == "__main__":
    main()
