#!/usr/bin/env python3
"""llama-bench-style pp/tg for a GGUF through llama.cpp (`llama-cpp-python`), to compare with
`muser bench` on the same file and the same thread count.

    tools/reference/.venv/bin/python tools/reference/bench_llama_cpp.py FILE.gguf [--threads 2]
        [-p 512] [-n 128] [-r 5]

pp<N>: one `eval` of N random tokens on an empty context (n_batch = N). tg<N>: N single-token
`eval` calls on an empty context. One warm-up, then `-r` repetitions; median and standard
deviation, as llama-bench reports them. Flash attention off (llama-cpp-python's default).
"""
import argparse
import statistics
import time

import numpy as np
from llama_cpp import Llama


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", type=int, default=5)
    a = ap.parse_args()
    llm = Llama(model_path=a.model, n_ctx=max(a.p, a.n) + 16, n_batch=max(a.p, 1),
                n_ubatch=max(a.p, 1), n_threads=a.threads, n_threads_batch=a.threads,
                flash_attn=False, verbose=False)
    rng = np.random.default_rng(0)
    n_vocab = llm.n_vocab()
    print(f"llama.cpp (llama-cpp-python) {a.model}, threads {a.threads}")
    print("| test | t/s | ± sd |")
    print("|---|---|---|")
    if a.p > 0:
        rates = []
        for rep in range(a.r + 1):
            toks = rng.integers(0, n_vocab, size=a.p).tolist()
            llm.reset()
            t0 = time.perf_counter()
            llm.eval(toks)
            dt = time.perf_counter() - t0
            if rep > 0:
                rates.append(a.p / dt)
        print(f"| pp{a.p} | {statistics.median(rates):.2f} | {statistics.pstdev(rates):.2f} |")
    if a.n > 0:
        rates = []
        for rep in range(a.r + 1):
            toks = rng.integers(0, n_vocab, size=a.n).tolist()
            llm.reset()
            t0 = time.perf_counter()
            for t in toks:
                llm.eval([t])
            dt = time.perf_counter() - t0
            if rep > 0:
                rates.append(a.n / dt)
        print(f"| tg{a.n} | {statistics.median(rates):.2f} | {statistics.pstdev(rates):.2f} |")


if __name__ == "__main__":
    main()
