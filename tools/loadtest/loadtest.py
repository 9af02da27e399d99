#!/usr/bin/env python3
"""Load test for `muser serve` (standard library only).

Starts the server on a synthetic tiny model (CPU), then:
  1. reference: each (prompt, seed) case streamed alone, one request at a time;
  2. scaling: 1 streaming client, then 8, for --scale-seconds each: aggregate tok/s;
  3. load: --clients concurrent streaming clients for --seconds; every request's tokens and
     log-probabilities must equal its solo reference exactly; every 7th request hangs up after
     5 tokens; afterwards the server must report no running sequence and no KV in use.
Prints a Markdown report (and writes it with --out).

    python3 tools/loadtest/loadtest.py --muser target/release/muser
"""
import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time

PROMPTS = [
    "The quick brown fox", "Once upon a time", "In the beginning", "Hello, world",
    "Rust is a language", "The H200 has", "Tell me a story about", "List three colours:",
]


async def stream(port, body, abort_after=None):
    """POST /v1/completions with stream; returns (status, tokens, logprobs, token times, t0)."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
                 b"Content-Type: application/json\r\nConnection: close\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        k, v = line.decode().split(":", 1)
        headers[k.strip().lower()] = v.strip()
    toks, lps, times = [], [], []
    if status != 200:
        await reader.read()
        writer.close()
        return status, toks, lps, times, t0
    buf = b""
    done = False
    while not done:
        size_line = await reader.readline()
        if not size_line:
            break
        size = int(size_line.strip() or b"0", 16)
        if size == 0:
            break
        buf += await reader.readexactly(size)
        await reader.readexactly(2)
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            for line in ev.split(b"\n"):
                if not line.startswith(b"data: "):
                    continue
                payload = line[6:]
                if payload == b"[DONE]":
                    done = True
                    break
                obj = json.loads(payload)
                if "error" in obj:
                    raise RuntimeError(f"error event: {obj}")
                lp = obj["choices"][0]["logprobs"] if obj["choices"] else None
                if lp:
                    now = time.perf_counter()
                    toks.extend(lp["tokens"])
                    lps.extend(lp["token_logprobs"])
                    times.extend([now] * len(lp["tokens"]))
                    if abort_after and len(toks) >= abort_after:
                        writer.close()
                        return status, toks, lps, times, t0
    writer.close()
    return status, toks, lps, times, t0


def case_body(case, max_tokens):
    prompt, seed = case
    return {"prompt": prompt, "max_tokens": max_tokens, "seed": seed, "temperature": 0.9,
            "top_k": 40, "stream": True, "logprobs": 1}


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def metrics(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    raw = await reader.read()
    writer.close()
    text = raw.split(b"\r\n\r\n", 1)[1].decode(errors="replace")
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(muser_[a-z_]+) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


async def clients(port, n, seconds, cases, refs, max_tokens, abort_every=0):
    """n clients looping until the deadline; returns stats."""
    deadline = time.perf_counter() + seconds
    st = {"requests": 0, "tokens": 0, "errors": [], "ttft": [], "itl": [], "aborted": 0,
          "checked": 0}

    async def client(cid):
        i = 0
        while time.perf_counter() < deadline:
            case = cases[(cid * 5 + i) % len(cases)]
            i += 1
            abort = 5 if abort_every and (cid + i) % abort_every == 0 else None
            try:
                status, toks, lps, times, t0 = await stream(port, case_body(case, max_tokens), abort)
            except Exception as e:  # noqa: BLE001
                st["errors"].append(f"client {cid}: {e!r}")
                continue
            st["requests"] += 1
            if status != 200:
                st["errors"].append(f"client {cid}: HTTP {status}")
                continue
            st["tokens"] += len(toks)
            if times:
                st["ttft"].append(times[0] - t0)
                st["itl"].extend(b - a for a, b in zip(times, times[1:]))
            ref = refs.get(case)
            if abort:
                st["aborted"] += 1
                ok = ref is None or (toks == ref[0][:len(toks)] and lps == ref[1][:len(lps)])
            else:
                ok = ref is None or (toks, lps) == ref
                st["checked"] += ref is not None
            if not ok:
                st["errors"].append(f"client {cid}: tokens differ from the solo run for {case}")

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(n)))
    st["elapsed"] = time.perf_counter() - t0
    return st


async def main_async(a, port):
    cases = [(p, s) for p in PROMPTS for s in (1, 2)]
    refs = {}
    for case in cases:
        status, toks, lps, _, _ = await stream(port, case_body(case, a.max_tokens))
        # A stream may end early on a sampled stop token (EOS/EOT); the comparison still holds.
        assert status == 200 and 0 < len(toks) <= a.max_tokens, (status, len(toks))
        refs[case] = (toks, lps)
    n_ref = sum(len(r[0]) for r in refs.values())
    print(f"reference: {len(cases)} cases streamed alone, {n_ref} tokens", flush=True)
    one = await clients(port, 1, a.scale_seconds, cases, refs, a.max_tokens)
    eight = await clients(port, 8, a.scale_seconds, cases, refs, a.max_tokens)
    tps1 = one["tokens"] / one["elapsed"]
    tps8 = eight["tokens"] / eight["elapsed"]
    print(f"scaling: 1 stream {tps1:.1f} tok/s, 8 streams {tps8:.1f} tok/s ({tps8 / tps1:.2f}x)",
          flush=True)
    load = await clients(port, a.clients, a.seconds, cases, refs, a.max_tokens, abort_every=7)
    # Slots of hung-up clients must be freed.
    for _ in range(100):
        m = await metrics(port)
        if m.get("muser_running_sequences") == 0 and m.get("muser_kv_positions") == 0:
            break
        await asyncio.sleep(0.1)
    return cases, tps1, tps8, one, eight, load, m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--muser", required=True)
    ap.add_argument("--workdir", default="/tmp/muser-loadtest")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--scale-seconds", type=float, default=15)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--split", default=None, choices=["auto", "never"], help="muser serve --split")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    model = os.path.join(a.workdir, "tiny.gguf")
    subprocess.run([a.muser, "synth", "--preset", "tiny", "--out", model, "-q"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cmd = [a.muser, "serve", "-m", model, "--device", a.device, "--port", "0", "--ctx", "512",
           "--parallel", str(a.parallel), "--queue", "256", "--quiet"]
    if a.threads:
        cmd += ["-t", str(a.threads)]
    if a.split:
        cmd += ["--split", a.split]
    srv = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port = None
    for _ in range(50):
        line = srv.stderr.readline()
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        srv.kill()
        sys.exit("server did not start")
    try:
        cases, tps1, tps8, one, eight, load, m = asyncio.run(main_async(a, port))
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    ms = lambda x: f"{x * 1000:.1f} ms"  # noqa: E731
    lines = [
        f"# muser serve load test",
        "",
        f"Command: `python3 tools/loadtest/loadtest.py --muser {a.muser} --clients {a.clients} "
        f"--seconds {a.seconds:g} --max-tokens {a.max_tokens} --parallel {a.parallel} --device {a.device}"
        f"{' --split ' + a.split if a.split else ''}`",
        f"Server: `muser serve` on the synthetic `tiny` preset, `--device {a.device} --ctx 512 --parallel "
        f"{a.parallel} --queue 256`; clients in the same machine (asyncio, raw HTTP/1.1, SSE).",
        "",
        "| phase | clients | seconds | requests | tokens | aggregate tok/s | TTFT p50 / p99 | ITL p50 / p99 | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, st in (("scaling", 1, one), ("scaling", 8, eight), ("load", a.clients, load)):
        lines.append(
            f"| {name} | {n} | {st['elapsed']:.1f} | {st['requests']} | {st['tokens']} | "
            f"{st['tokens'] / st['elapsed']:.1f} | {ms(pct(st['ttft'], 50))} / {ms(pct(st['ttft'], 99))} | "
            f"{ms(pct(st['itl'], 50))} / {ms(pct(st['itl'], 99))} | {len(st['errors'])} |")
    lines += [
        "",
        f"- 8 streams vs 1: **{tps8 / tps1:.2f}x** aggregate tok/s ({tps8:.1f} vs {tps1:.1f}).",
        f"- Load phase: {load['checked']} complete streams compared with their solo runs (tokens "
        f"and log-probabilities identical: {'yes' if not load['errors'] else 'NO'}); "
        f"{load['aborted']} clients hung up after 5 tokens.",
        f"- After the load: running sequences {m.get('muser_running_sequences'):.0f}, KV positions "
        f"{m.get('muser_kv_positions'):.0f}, KV bytes {m.get('muser_kv_bytes'):.0f}, cancelled "
        f"{m.get('muser_sequences_cancelled_total'):.0f}; mean batch "
        f"{m.get('muser_step_rows_total', 0) / max(1, m.get('muser_steps_total', 1)):.1f} rows/step.",
    ]
    errors = one["errors"] + eight["errors"] + load["errors"]
    if errors:
        lines += ["", "Errors (first 10):", *[f"- {e}" for e in errors[:10]]]
    report = "\n".join(lines) + "\n"
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report)
    ok = not errors and m.get("muser_running_sequences") == 0 and m.get("muser_kv_positions") == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
