#!/usr/bin/env python3
"""Real models' chat templates rendered by `anvil render-chat` and by transformers'
apply_chat_template (E2E), and by plain jinja2 in transformers' environment fed the raw messages
(ENGINE; since anvil prepares messages as transformers does, E2E is the comparison that counts).
A development check, not part of the test suite (it needs transformers: `python3 -m venv /tmp/tv
&& /tmp/tv/bin/pip install transformers jinja2`).
Templates: llama.cpp's models/templates, e.g. from the llama-cpp-python sdist that
scripts/fetch-llama-cpp-vocabs fetches (`tar -xzf llama_cpp_python-0.3.36.tar.gz --wildcards
'*/models/templates/*'`); ANVIL_TEMPLATES names that folder, ANVIL_CLI the binary, and a tokenizer
folder with bos <s> / eos </s> is made in $CHECK_DIR/base from the Qwen3 tokenizer in tests/data.
Usage: /tmp/tv/bin/python scripts/checks/model_templates_vs_transformers.py [name-substring ...]
Writes $CHECK_DIR/results.json (default /tmp/ct) and prints a table."""
import json, os, sys, subprocess, shutil, glob, copy, traceback
from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import _compile_jinja_template

TDIR = os.environ.get("ANVIL_TEMPLATES", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates")
ANVIL = os.environ.get("ANVIL_CLI", "build-cuda/anvil")
CHECK_DIR = os.environ.get("CHECK_DIR", "/tmp/ct")
BASE = CHECK_DIR + "/base"
WORK = CHECK_DIR + "/models"
BOS, EOS, PAD = "<s>", "</s>", "<|endoftext|>"
def make_base():
    # The Qwen3 tokenizer with <s> / </s> named as bos / eos, so templates that print them show them.
    if os.path.exists(BASE + "/tokenizer_config.json"):
        return
    os.makedirs(BASE, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "../../tests/data/tokenizers/qwen3/tokenizer.json"), BASE)
    with open(BASE + "/tokenizer_config.json", "w") as f:
        json.dump({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}, f)


make_base()


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
         {"type": "function", "function": {"name": "add", "description": "Add two integers",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                         "required": ["a", "b"]}}}]

U = lambda c: {"role": "user", "content": c}
A = lambda c: {"role": "assistant", "content": c}
S = lambda c: {"role": "system", "content": c}
MULTI = [U("Hi there"), A("Hello! How can I help?"), U("What is 2+2?"), A("It is 4.")]
TC_ASSIST = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]}
TOOL_MSG = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"sunny\"}"}
UNI = "Héllo wörld — 你好, мир! 🎉👍🏽\nLine 2 with \"double\" and 'single' quotes\n\ttab & <tag> \\backslash\\ {{ not jinja }}"

CONVS = {
  "c1_user":        dict(messages=[U("Hello, who are you?")], agp=True),
  "c2_sys_multi":   dict(messages=[S("You are a helpful assistant."), U("Hi"), A("Hello!"), U("How are you?")], agp=True),
  "c3_multi_noagp": dict(messages=MULTI, agp=False),
  "c3_multi_agp":   dict(messages=MULTI[:3], agp=True),
  "c4_tools":       dict(messages=[U("What's the weather in Paris?"), TC_ASSIST, TOOL_MSG], agp=True, tools=TOOLS),
  "c4b_tools_done": dict(messages=[S("Be brief."), U("What's the weather in Paris?"), TC_ASSIST, TOOL_MSG, A("It is 21C and sunny."), U("Thanks")], agp=True, tools=TOOLS),
  "c4n_tools_nocontent": dict(messages=[U("What's the weather in Paris?"), {k: v for k, v in TC_ASSIST.items() if v is not None}, TOOL_MSG], agp=True, tools=TOOLS),
  "c8_nested_args": dict(messages=[U("Plan a trip"), {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich <\"old\" town> & 'co'", "opts": {"days": [1, 2], "unit": "celsius", "x": None, "f": 1.5, "ok": True}}}},
      {"id": "call_3", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
      {"role": "tool", "tool_call_id": "call_2", "content": "sunny & <warm>"}, {"role": "tool", "tool_call_id": "call_3", "content": "3"}], agp=True, tools=TOOLS),
  "c8b_dict_args": dict(messages=[U("Plan a trip"), {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich <\"old\" town> & 'co'", "opts": {"days": [1, 2], "unit": "celsius", "x": None, "f": 1.5, "ok": True}}}}]},
      {"role": "tool", "tool_call_id": "call_2", "content": "sunny & <warm>"}], agp=True, tools=TOOLS),
  "c5_unicode":     dict(messages=[S(UNI), U(UNI), A(UNI), U("ok " + UNI)], agp=True),
  "c6_reasoning":   dict(messages=[U("What is 2+2?"), {"role": "assistant", "content": "4", "reasoning_content": "Simple: 2+2=4."}, U("And 3+3?")], agp=True),
  "c6b_reason_last":dict(messages=[U("What is 2+2?"), {"role": "assistant", "content": "4", "reasoning_content": "Simple: 2+2=4."}], agp=False),
  "c7_think_off":   dict(messages=[U("Hi")], agp=True, enable_thinking=False),
  "c7_think_on":    dict(messages=[S("sys"), U("Hi"), {"role": "assistant", "content": "Hello", "reasoning_content": "greet"}, U("Bye")], agp=True, enable_thinking=True),
}

def setup_folder(name, src):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        p = os.path.join(d, f)
        if not os.path.exists(p): os.symlink(os.path.join(BASE, f), p)
    shutil.copy(src, os.path.join(d, "chat_template.jinja"))
    return d

def run_anvil(folder, conv, tag):
    mp = CHECK_DIR + f"/io/{tag}.msgs.json"; tp = CHECK_DIR + f"/io/{tag}.tools.json"
    json.dump(conv["messages"], open(mp, "w"), ensure_ascii=False)
    cmd = [ANVIL, "render-chat", folder, "--messages", mp, "--json"]
    if conv.get("tools") is not None:
        json.dump(conv["tools"], open(tp, "w"), ensure_ascii=False); cmd += ["--tools", tp]
    if conv["agp"]: cmd.append("--add-generation-prompt")
    if "enable_thinking" in conv: cmd += ["--enable-thinking", "true" if conv["enable_thinking"] else "false"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, (r.stderr.strip() or r.stdout.strip())[-400:] or f"rc={r.returncode}"
    try:
        return json.loads(r.stdout), None
    except Exception as e:
        return None, f"bad json output: {r.stdout[:200]!r}"

def run_tf(tok, tmpl, conv):
    kw = {}
    if "enable_thinking" in conv: kw["enable_thinking"] = conv["enable_thinking"]
    try:
        return tok.apply_chat_template(copy.deepcopy(conv["messages"]), tools=conv.get("tools"), tokenize=False,
                                       add_generation_prompt=conv["agp"], chat_template=tmpl, **kw), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"[:400]

def run_j2(tmpl, conv):
    # anvil's context: messages, tools only if given, add_generation_prompt, enable_thinking if given, tokens
    ctx = {"messages": copy.deepcopy(conv["messages"]), "add_generation_prompt": conv["agp"],
           "bos_token": BOS, "eos_token": EOS, "pad_token": PAD}
    if conv.get("tools") is not None: ctx["tools"] = copy.deepcopy(conv["tools"])
    if "enable_thinking" in conv: ctx["enable_thinking"] = conv["enable_thinking"]
    try:
        return _compile_jinja_template(tmpl).render(**ctx), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"[:400]

def status(a, ae, b, be):
    if ae is None and be is None: return "equal" if a == b else "DIFFER"
    if ae is not None and be is not None: return "both_err"
    return "ONLY_ANVIL_ERR" if ae is not None else "ONLY_REF_ERR"

def main():
    os.makedirs(CHECK_DIR + "/io", exist_ok=True); os.makedirs(WORK, exist_ok=True)
    filt = sys.argv[1:]
    tok = AutoTokenizer.from_pretrained(BASE)
    results = {}
    for src in sorted(glob.glob(os.path.join(TDIR, "*.jinja"))):
        name = os.path.basename(src)[:-6]
        if filt and not any(f in name for f in filt): continue
        tmpl = open(src, encoding="utf-8").read()
        folder = setup_folder(name, src)
        for cname, conv in CONVS.items():
            tag = f"{name}.{cname}"
            a, ae = run_anvil(folder, conv, tag)
            t, te = run_tf(tok, tmpl, conv)
            j, je = run_j2(tmpl, conv)
            results[tag] = dict(template=name, conv=cname, anvil=a, anvil_err=ae, tf=t, tf_err=te, j2=j, j2_err=je,
                                e2e=status(a, ae, t, te), engine=status(a, ae, j, je))
    json.dump(results, open(CHECK_DIR + "/results.json", "w"), ensure_ascii=False, indent=1)
    names = sorted({r["template"] for r in results.values()})
    ab = {"equal": ".", "DIFFER": "D", "both_err": "e", "ONLY_ANVIL_ERR": "A", "ONLY_REF_ERR": "R"}
    print("legend: . equal  D differ  e both error  A only anvil errors  R only reference errors;  cell = E2E/ENGINE")
    print(f"{'template':52s} " + " ".join(c[:6].ljust(6) for c in CONVS))
    for n in names:
        cells = [ab[results[f'{n}.{c}']['e2e']] + "/" + ab[results[f'{n}.{c}']['engine']] for c in CONVS if f'{n}.{c}' in results]
        print(f"{n[:52]:52s} " + " ".join(x.ljust(6) for x in cells))
    from collections import Counter
    print("E2E:", Counter(r["e2e"] for r in results.values()))
    print("ENGINE:", Counter(r["engine"] for r in results.values()))

if __name__ == "__main__":
    main()
