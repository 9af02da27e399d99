"""Shared helpers for the muser-quant fixture generators: the fixture file format and inputs.

Fixture format (all integers little-endian), read by crates/muser-quant/tests/common/mod.rs:

    b"MQFX"  u32 version (=1)  u32 n_records
    per record:
        u8 kind            0 = dequantize (bytes -> f32), 1 = quantize (f32 -> bytes)
        u8 len, type name  ggml name, e.g. "Q4_K"
        u8 len, label      what the case exercises, e.g. "outlier"
        u32 n_elements     number of f32 values
        u32 n_bytes        number of encoded bytes
        kind 0: n_bytes encoded bytes, then n_elements f32 (expected output)
        kind 1: n_elements f32 (input), then n_bytes encoded bytes (expected output)
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = REPO_ROOT / "crates" / "muser-quant" / "tests" / "fixtures"

DEQUANT = 0
QUANT = 1


class FixtureWriter:
    def __init__(self) -> None:
        self.records: list[bytes] = []

    def _head(self, kind: int, ty: str, label: str, n_elements: int, n_bytes: int) -> bytes:
        t, lab = ty.encode(), label.encode()
        return struct.pack("<BB", kind, len(t)) + t + struct.pack("<B", len(lab)) + lab + struct.pack("<II", n_elements, n_bytes)

    def dequant(self, ty: str, label: str, raw: np.ndarray, expected: np.ndarray) -> None:
        raw = np.ascontiguousarray(raw, dtype=np.uint8).ravel()
        expected = np.ascontiguousarray(expected, dtype="<f4").ravel()
        self.records.append(self._head(DEQUANT, ty, label, expected.size, raw.size) + raw.tobytes() + expected.tobytes())

    def quant(self, ty: str, label: str, inputs: np.ndarray, expected: np.ndarray) -> None:
        inputs = np.ascontiguousarray(inputs, dtype="<f4").ravel()
        expected = np.ascontiguousarray(expected).view(np.uint8).ravel()
        self.records.append(self._head(QUANT, ty, label, inputs.size, expected.size) + inputs.tobytes() + expected.tobytes())

    def write(self, name: str) -> Path:
        FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
        path = FIXTURE_DIR / name
        body = b"MQFX" + struct.pack("<II", 1, len(self.records)) + b"".join(self.records)
        path.write_bytes(body)
        print(f"wrote {path.relative_to(REPO_ROOT)}: {len(self.records)} records, {len(body)} bytes")
        return path


def quant_inputs(rng: np.random.Generator, block: int, n_random_blocks: int) -> list[tuple[str, np.ndarray]]:
    """Labelled f32 inputs (each a whole number of `block`-element blocks) covering the edge cases
    of the reference quantizers: zeros, constants, one-signed blocks, outliers, tiny and large
    magnitudes, sparse blocks, and blocks of widely varying scale."""
    f = np.float32
    n = block * n_random_blocks
    two = block * 2
    cases: list[tuple[str, np.ndarray]] = []
    cases.append(("gaussian", (rng.standard_normal(n) * 0.02).astype(f)))
    cases.append(("uniform", rng.uniform(-1.0, 1.0, n).astype(f)))
    scales = 10.0 ** rng.uniform(-8, 4, n_random_blocks)
    cases.append(("mixed-scales", (rng.standard_normal((n_random_blocks, block)) * scales[:, None]).astype(f).ravel()))
    cases.append(("zeros", np.zeros(two, dtype=f)))
    z = np.zeros(two, dtype=f)
    z[block + 3] = -0.75
    cases.append(("one-nonzero", z))
    cases.append(("constant", np.full(two, 0.3, dtype=f)))
    cases.append(("positive", (np.abs(rng.standard_normal(two)) + 0.5).astype(f)))
    cases.append(("negative", (-np.abs(rng.standard_normal(two)) - 0.25).astype(f)))
    o = (rng.standard_normal(two) * 0.01).astype(f)
    o[rng.integers(0, block)] = 1000.0
    o[block + rng.integers(0, block)] = -50.0
    cases.append(("outlier", o))
    cases.append(("tiny", (rng.standard_normal(two) * 1e-9).astype(f)))
    cases.append(("subnormal", (rng.standard_normal(two) * 1e-39).astype(f)))
    cases.append(("large", (rng.standard_normal(two) * 1e4).astype(f)))
    s = (rng.standard_normal(two)).astype(f)
    s[rng.random(two) < 0.9] = 0.0
    cases.append(("sparse", s))
    q = np.round(rng.standard_normal(two) * 4).astype(f)  # exact small integers: rounding ties
    cases.append(("integers", q))
    return cases
