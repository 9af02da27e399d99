#!/usr/bin/env python3
"""Tokenizer and chat-template fixtures for crates/muser-tokenizer, from the references.

Token ids come from llama.cpp (llama-cpp-python 0.3.36, `Llama(vocab_only=True)`), for
synthetic GGUFs written by the project binary:

    cargo build --release -p muser-cli
    target/release/muser synth --preset tiny --out /tmp/tok-tiny.gguf
    target/release/muser synth --preset 30b --layers 1 --hidden 256 --heads 2 --kv-heads 1 \\
        --ffn 256 --out /tmp/tok-200k.gguf
    /root/refvenv/bin/python tools/reference/gen_tokenizer_fixtures.py /tmp/tok-tiny.gguf \\
        /tmp/tok-200k.gguf

For every fixture string: ids for add_bos x parse_special, and llama.cpp's per-token
detokenization of the BOS-less ids with special off and on (hex of the bytes).

Chat renders come from Jinja2 configured like Hugging Face's `apply_chat_template`
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, `raise_exception`,
`tojson` = json.dumps(ensure_ascii=False)) over the template stored in the tiny GGUF.
"""
import json
import os
import sys

import gguf
import jinja2
import jinja2.ext
import jinja2.sandbox
import llama_cpp

OUT_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "muser-tokenizer",
                       "tests", "fixtures")


def stress_text():
    """~2.5 KB mixing every class the splitter distinguishes (deterministic)."""
    parts = ["The quick brown fox", " jumps over", " 1234567890", " lazy dogs!!", "\n\n",
             "  indented\tline", "\r\n", "don't", " I'LL", " we've", " élan", " 日本語",
             " 👍🏽", "  ", "x=y+z;", " (a, b)", "\u3000", "ÀÉÎÕÜ", " --- ", "\n \n",
             "camelCaseWord", " HTTPServer", " 3.14", " $5,000.00", "...", " ¿qué?"]
    out, k = [], 7
    for i in range(120):
        k = (k * 1103515245 + 12345) % (1 << 31)
        out.append(parts[k % len(parts)])
    return "".join(out)


TEXTS = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n\n", "\r\n", " \r\n \r\n", "a\r\nb",
    "Hello world", "Hello, world! How are you today?", "hello  world", "   leading",
    "trailing   ", "trailing space ", "  both  ", "\t\tindented\tcode", "line1\nline2\n",
    "para1\n\n\npara2", "x \n y", "foo!\n\n\nbar", "end.\n", "a \t\n b",
    "1", "12", "123", "1234", "1234567890123", "1,234,567.89", "3.14159265358979",
    "0x1F 0b1010 1e-5", "v1.2.3", "2024-01-31T12:00:00Z",
    "!!!???...", "--- === +++", "$$$ %%% ^^^", "...\n\n", "(a) [b] {c} <d>", "a'", "'",
    "''", "' s", "@user #tag", "https://example.com/path?q=1&r=2",
    "don't", "I'LL", "we've they're she'd it's", "'S 'T 'RE 'VE 'M 'LL 'D", "O'Neil's",
    "élan ñandú über", "Crème brûlée", "e\u0301", "\u0301 combining", "ﬁ ligature",
    "ＡＢＣ fullwidth", "٣٤٥ arabic digits", "Ⅻ roman ½ ¾ x²", "ß ẞ İ ı",
    "日本語のテキスト", "中文字符测试", "한국어 텍스트", "Русский текст", "العربية", "עברית",
    "ไทย ภาษา", "हिन्दी", "mixed Русский English 中文 العربية 123",
    "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈 flag", "emoji👍in👍text", "❤️", "🤖🤖🤖",
    "\u00a0nbsp\u00a0", "wide\u3000space", "x\u2028y\u2029z", "tab\x0bvt\x0cff", "\x00\x01\x7f",
    "\U00011F04\U00011F05 Kawi", "\U000E0001 tag", "\uFFFD replacement", "\U0010FFFF",
    "<|eot|>", "<|eom|>", "text <|eot|> more", "<|start|>user<|message|>hi<|eot|>",
    "<|start|>assistant to=self<|message|>think<|eom|><|start|>assistant<|message|>ok<|eot|>",
    "<|begin_of_text|>x<|end_of_text|>", "<|reserved_special_token_5|>", "<|<|eot|>|>",
    "<|eot", "eot|>", "<|image_start|><|patch|><|patch|><|image_end|>", "<|mask|> <|mask|>",
    "<atem:function_calls><atem:invoke name=\"get\"></atem:invoke></atem:function_calls>",
    "def f(x):\n    return x ** 2\n", "if (a && b) { c(); }", "SELECT * FROM t;",
    "aaaaaaaaaaaaaaaaaaaa", "the the the the", "qzxj vkwy", "Theta Zeta Eta",
    stress_text(),
]


def tokenize_cases(path):
    m = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    cases = []
    for text in TEXTS:
        b = text.encode("utf-8")
        case = {"text": text}
        for add_bos in (False, True):
            for special in (False, True):
                key = f"{'bos' if add_bos else 'nobos'}_{'special' if special else 'plain'}"
                case[key] = m.tokenize(b, add_bos=add_bos, special=special)
        for special in (False, True):
            ids = case["nobos_special" if special else "nobos_plain"]
            # Per token (llama_token_to_piece), as llama-cpp-python's detokenize does, minus
            # its "drop a leading space after BOS" step, which does not apply without BOS.
            out = b"".join(m.tokenizer_.detokenize([t], special=special) for t in ids)
            case[f"detok_{'special' if special else 'plain'}_hex"] = out.hex()
        cases.append(case)
    return {"n_vocab": m.n_vocab(), "bos": m.token_bos(), "eos": m.token_eos(), "cases": cases}


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


CONVERSATIONS = [
    {"name": "single_user", "messages": [{"role": "user", "content": "Hello!"}],
     "tools": None, "add_generation_prompt": True},
    {"name": "system_user_no_prompt",
     "messages": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Hi"}],
     "tools": None, "add_generation_prompt": False},
    {"name": "reasoning_and_answer",
     "messages": [{"role": "user", "content": "2+2?"},
                  {"role": "assistant", "content": "4",
                   "reasoning_content": "Simple arithmetic."},
                  {"role": "user", "content": "Thanks — ünïcödé 👍"}],
     "tools": None, "add_generation_prompt": True},
    {"name": "tool_call_roundtrip",
     "messages": [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
                   "tool_calls": [{"type": "function", "function": {
                       "name": "get_weather",
                       "arguments": {"unit": "celsius", "city": "Paris"}}}]},
                  {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21}"},
                  {"role": "assistant", "content": "It is 21 °C."}],
     "tools": [{"type": "function", "function": {
         "name": "get_weather", "description": "Current weather <b>now</b> & 'later'",
         "parameters": {"type": "object", "properties": {
             "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "f"]}},
             "required": ["city"]}, "scale": 1.5}}],
     "add_generation_prompt": True},
    {"name": "string_arguments",
     "messages": [{"role": "assistant", "content": None, "tool_calls": [
         {"function": {"name": "f", "arguments": "{\"x\": 1}"}}]}],
     "tools": None, "add_generation_prompt": False},
]


def chat_cases(path):
    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.chat_template"]
    template_src = bytes(field.parts[field.data[0]]).decode("utf-8")
    tokens = reader.fields["tokenizer.ggml.tokens"]
    def tok_text(key):
        f = reader.fields[key]
        i = int(f.parts[f.data[0]][0])
        return bytes(tokens.parts[tokens.data[i]]).decode("utf-8")
    bos, eos = tok_text("tokenizer.ggml.bos_token_id"), tok_text("tokenizer.ggml.eos_token_id")
    tmpl = hf_environment().from_string(template_src)
    out = []
    for conv in CONVERSATIONS:
        rendered = tmpl.render(messages=conv["messages"], tools=conv["tools"],
                               add_generation_prompt=conv["add_generation_prompt"],
                               bos_token=bos, eos_token=eos)
        out.append(dict(conv, rendered=rendered))
    return {"template_len": len(template_src), "cases": out}


def main():
    tiny = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tok-tiny.gguf"
    big = sys.argv[2] if len(sys.argv) > 2 else "/tmp/tok-200k.gguf"
    os.makedirs(OUT_DIR, exist_ok=True)
    meta = {"generator": "tools/reference/gen_tokenizer_fixtures.py",
            "reference": f"llama-cpp-python {llama_cpp.__version__}"}
    for name, path in (("tiny", tiny), ("200k", big)):
        data = dict(meta, **tokenize_cases(path))
        with open(os.path.join(OUT_DIR, f"tokens_{name}.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(f"{name}: {len(data['cases'])} strings x 4 id lists", file=sys.stderr)
    chat = dict(meta, reference=f"jinja2 {jinja2.__version__} (Hugging Face environment)",
                **chat_cases(tiny))
    with open(os.path.join(OUT_DIR, "chat.json"), "w", encoding="utf-8") as f:
        json.dump(chat, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"chat: {len(chat['cases'])} renders", file=sys.stderr)


if __name__ == "__main__":
    main()
