"""Concurrent /v1/completions load on a running `muser serve`: N clients, one request each
(temperature 0, max_tokens M, a prompt of ~P words); prints each request's time, token
counts, finish reason and a hash of its text (request i's prompt depends on i only: at
temperature 0 its text must not depend on how many clients ran beside it), and the aggregate
completion tokens per second. Standard library only.
Usage: python3 serve_load.py URL N M P"""
import hashlib
import json
import sys
import threading
import time
import urllib.request

url, n, m, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
results = [None] * n


def one(i):
    words = " ".join(f"w{(i * 7919 + k * 31) % 997}" for k in range(p))
    body = json.dumps({"prompt": f"Request {i}: {words}", "max_tokens": m,
                       "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t = time.time()
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.loads(r.read())
    text = out["choices"][0]["text"]
    results[i] = (round(time.time() - t, 3), out["usage"]["prompt_tokens"],
                  out["usage"]["completion_tokens"], out["choices"][0]["finish_reason"],
                  hashlib.sha256(text.encode()).hexdigest()[:12])


t0 = time.time()
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for th in threads:
    th.start()
for th in threads:
    th.join()
wall = time.time() - t0
total = sum(r[2] for r in results if r)
for i, r in enumerate(results):
    print(f"request {i}: {r}")
print(f"{n} clients x {m} tokens: {total} completion tokens in {wall:.2f} s = {total / wall:.1f} tok/s aggregate")
