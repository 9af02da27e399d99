#!/usr/bin/env python3
"""Black-box suite: starts `muser serve` on a synthetic tiny model (CPU) and drives it with the
official `openai` Python package, installed from PyPI into a venv by this script.

    python3 tools/openai/suite.py --muser target/release/muser --workdir /tmp/muser-openai

Exits non-zero on the first failed check; prints one line per check.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import venv

HERE = os.path.dirname(os.path.abspath(__file__))


def ensure_venv(workdir):
    """Re-executes this script inside a venv that has the pinned `openai` package."""
    vdir = os.path.join(workdir, "venv")
    if os.path.realpath(sys.prefix) == os.path.realpath(vdir):
        return
    py = os.path.join(vdir, "bin", "python")
    if not os.path.exists(py):
        print(f"creating venv {vdir}", flush=True)
        venv.create(vdir, with_pip=True)
    req = os.path.join(HERE, "requirements.txt")
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", req], check=True)
    os.execv(py, [py] + sys.argv)


def http(method, url, body=None, raw=None):
    """(status, text) of a plain HTTP call (urllib: no client library in between)."""
    import urllib.error
    import urllib.request
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Server:
    def __init__(self, muser, model, extra=()):
        self.proc = subprocess.Popen(
            [muser, "serve", "-m", model, "--device", "cpu", "--port", "0", "--ctx", "512",
             "--parallel", "4", "--queue", "16", "-t", "1", "--quiet", *extra],
            stderr=subprocess.PIPE, text=True)
        self.log = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                return
        raise SystemExit("server did not start:\n" + "".join(self.log))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--muser", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ensure_venv(args.workdir)
    import openai

    model = os.path.join(args.workdir, "tiny.gguf")
    subprocess.run([args.muser, "synth", "--preset", "tiny", "--out", model, "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    srv = Server(args.muser, model)
    passed = 0

    def check(name, cond, detail=""):
        nonlocal passed
        if not cond:
            srv.stop()
            raise SystemExit(f"FAIL {name} {detail}")
        passed += 1
        print(f"ok   {name}", flush=True)

    try:
        c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        print(f"openai {openai.__version__} against {srv.url}", flush=True)

        models = c.models.list()
        ids = [m.id for m in models.data]
        check("models.list", ids == ["muse-glimmer-synthetic-tiny"], ids)
        mid = ids[0]

        msgs = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say something."}]
        r = c.chat.completions.create(model=mid, messages=msgs, max_tokens=10, seed=11)
        ch = r.choices[0]
        check("chat: object and role", r.object == "chat.completion" and ch.message.role == "assistant")
        check("chat: finish_reason length at max_tokens", ch.finish_reason == "length", ch.finish_reason)
        check("chat: usage adds up", r.usage.completion_tokens == 10
              and r.usage.total_tokens == r.usage.prompt_tokens + 10, r.usage)
        r2 = c.chat.completions.create(model=mid, messages=msgs, max_tokens=10, seed=11)
        check("chat: same seed, same message", r2.choices[0].message.content == ch.message.content)
        others = {c.chat.completions.create(model=mid, messages=msgs, max_tokens=10, seed=s)
                  .choices[0].message.content for s in (1, 2, 3)}
        check("chat: other seeds differ", len(others | {ch.message.content}) > 1, others)
        r3 = c.chat.completions.create(model=mid, messages=msgs, max_completion_tokens=3, seed=11)
        check("chat: max_completion_tokens", r3.usage.completion_tokens == 3, r3.usage)

        stream = c.chat.completions.create(model=mid, messages=msgs, max_tokens=10, seed=11,
                                           stream=True, stream_options={"include_usage": True})
        parts, finish, usage, roles = [], None, None, []
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta.role:
                    roles.append(choice.delta.role)
                if choice.delta.content:
                    parts.append(choice.delta.content)
                if choice.finish_reason:
                    finish = choice.finish_reason
        check("chat stream: deltas equal the non-streamed content",
              "".join(parts) == (ch.message.content or ""), ("".join(parts), ch.message.content))
        check("chat stream: role first, finish_reason, usage chunk",
              roles == ["assistant"] and finish == "length" and usage is not None
              and usage.completion_tokens == 10 and usage.prompt_tokens == r.usage.prompt_tokens)

        lp = c.chat.completions.create(model=mid, messages=msgs, max_tokens=6, seed=5,
                                       logprobs=True, top_logprobs=3)
        content = lp.choices[0].logprobs.content
        check("chat logprobs: one entry per token", len(content) == 6, len(content))
        check("chat logprobs: top 3, sorted, sampled one not above the best",
              all(len(e.top_logprobs) == 3 and e.top_logprobs[0].logprob >= e.top_logprobs[2].logprob
                  and e.logprob <= e.top_logprobs[0].logprob + 1e-6 and e.logprob <= 0 for e in content))

        tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        tr = c.chat.completions.create(model=mid, messages=msgs + [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
            tools=tools, tool_choice="auto", max_tokens=4, seed=1)
        check("chat: tools and a tool round trip are accepted", tr.choices[0].finish_reason in ("length", "stop", "tool_calls"))
        jmsgs = [{"role": "user", "content": "Reply with a JSON object."}]
        jr = c.chat.completions.create(model=mid, messages=jmsgs, max_tokens=4, seed=1,
                                       response_format={"type": "json_object"})
        check("chat: response_format json_object accepted", jr.usage.completion_tokens >= 1)

        prompt = "The quick brown fox"
        cr = c.completions.create(model=mid, prompt=prompt, max_tokens=24, temperature=0)
        text = cr.choices[0].text
        n_prompt = len(json.loads(http("POST", srv.url + "/tokenize",
                                       {"content": prompt, "add_special": True})[1])["tokens"])
        check("completions: usage counts the prompt's tokens", cr.usage.prompt_tokens == n_prompt
              and cr.usage.completion_tokens == 24, (cr.usage, n_prompt))
        check("completions: greedy is deterministic",
              c.completions.create(model=mid, prompt=prompt, max_tokens=24, temperature=0).choices[0].text == text)
        if len(text) >= 8:
            stop = text[len(text) // 2:len(text) // 2 + 2]
            sr = c.completions.create(model=mid, prompt=prompt, max_tokens=24, temperature=0, stop=[stop])
            check("completions: stop string cuts before it", sr.choices[0].text == text[:text.index(stop)]
                  and sr.choices[0].finish_reason == "stop", (sr.choices[0].text, stop, text))
        streamed = "".join(ch.choices[0].text for ch in c.completions.create(
            model=mid, prompt=prompt, max_tokens=24, temperature=0, stream=True) if ch.choices)
        check("completions stream: same text", streamed == text, (streamed, text))
        lr = c.completions.create(model=mid, prompt=prompt, max_tokens=5, logprobs=2, seed=3)
        lpo = lr.choices[0].logprobs
        check("completions logprobs", len(lpo.tokens) == 5 and len(lpo.token_logprobs) == 5
              and all(len(t) == 2 for t in lpo.top_logprobs))

        def raises(name, exc, fn, status, needle):
            try:
                fn()
            except exc as e:
                body = e.body if isinstance(e.body, dict) else {}
                msg = body.get("message", "") if body else str(e)
                check(name, e.status_code == status and needle in json.dumps(body), (e.status_code, msg))
                return
            check(name, False, "no error raised")

        raises("error: n > 1", openai.BadRequestError,
               lambda: c.chat.completions.create(model=mid, messages=msgs, n=2), 400, "n")
        raises("error: temperature out of range", openai.BadRequestError,
               lambda: c.chat.completions.create(model=mid, messages=msgs, temperature=5), 400, "temperature")
        raises("error: prompt over the context", openai.BadRequestError,
               lambda: c.completions.create(model=mid, prompt="word " * 600, max_tokens=1), 400,
               "context_length_exceeded")
        raises("error: wrong type", openai.BadRequestError,
               lambda: c.chat.completions.create(model=mid, messages=msgs, max_tokens="many"), 400, "max_tokens")
        raises("error: json_object without asking for JSON", openai.BadRequestError,
               lambda: c.chat.completions.create(model=mid, messages=msgs,
                                                 response_format={"type": "json_object"}), 400, "json")
        raises("error: unknown role", openai.BadRequestError,
               lambda: c.chat.completions.create(model=mid, messages=[{"role": "wizard", "content": "x"}]),
               400, "role")
        status, text = http("POST", srv.url + "/v1/chat/completions", raw=b"{not json")
        check("error: malformed JSON is a 400 with an error body",
              status == 400 and "error" in json.loads(text), text)
        metrics = http("GET", srv.url + "/metrics")[1]
        check("metrics: counters and histograms", "muser_generated_tokens_total" in metrics
              and "muser_time_to_first_token_seconds_bucket" in metrics
              and 'status="400"' in metrics, metrics[:400])
    finally:
        srv.stop()
    print(f"openai suite: {passed} checks passed")


if __name__ == "__main__":
    main()
