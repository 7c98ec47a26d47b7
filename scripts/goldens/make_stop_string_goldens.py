#!/usr/bin/env python3
"""transformers' StopStringCriteria on two tokenizers (qwen3: byte-level; spm-llama2: Metaspace
with byte fallback): every prefix of a few encoded texts (multi-byte characters split across
byte tokens, spaces that are word-start markers, newlines) against a set of stop strings, and
whether the criterion stops there. Then generate() with stop_strings on the qwen2-tiny fixture
(its ids are the first 1000 of Qwen's vocabulary) with the qwen3 tokenizer, greedy and beams,
the stop strings taken from pieces of its own greedy output. Made with transformers 5.25.
Writes tests/data/extra/stop_strings.json.
Usage: make_stop_string_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, GenerationConfig, PreTrainedTokenizerFast
from transformers.generation.stopping_criteria import StopStringCriteria

TEXTS = ["Hello world, stop here.\n\nNext line", "naïve café 😀 ünïcödé stop", "a  b\tc stopper"]
STOPS = ["stop", " stop", "\n\n", "é", "😀", "co", "o", "d, s", "ïcö"]


def criterion_cases(folder):
    tok = PreTrainedTokenizerFast(tokenizer_file=f"{folder}/tokenizer.json")
    criterion = StopStringCriteria(tok, STOPS)
    out = []
    for text in TEXTS:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        for n in range(1, len(ids) + 1):
            for i, stop in enumerate(STOPS):
                single = StopStringCriteria(tok, [stop])
                hit = bool(single(torch.tensor([ids[:n]]), None)[0])
                if hit:
                    out.append({"ids": ids[:n], "stop": stop})
        # and all at once on the full prefixes: the same as any of them
        assert all(bool(criterion(torch.tensor([ids[:n]]), None)[0]) ==
                   any(c["ids"] == ids[:n] for c in out) for n in range(1, len(ids) + 1))
    return {"texts": TEXTS, "stops": STOPS, "hits": out,
            "encoded": [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS]}


def generate_cases(data):
    tok = PreTrainedTokenizerFast(tokenizer_file=f"{data}/tokenizers/qwen3/tokenizer.json")
    model = AutoModelForCausalLM.from_pretrained(f"{data}/qwen2-tiny/model", dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    model.generation_config.eos_token_id = None
    g = load_file(f"{data}/qwen2-tiny/golden.safetensors")
    ids, mask = g["input_ids_b"], g["attention_mask_b"]
    prompt = ids.shape[1]
    with torch.no_grad():
        plain = model.generate(ids, attention_mask=mask, max_new_tokens=16, do_sample=False,
                               pad_token_id=0)
    # Stop strings from the decoded continuation: a piece ending mid-way through the 5th new
    # token of row 0, and the text of row 1's 3rd to 4th new tokens.
    row0 = tok.decode(plain[0, prompt:prompt + 5])
    row1 = tok.decode(plain[1, prompt + 2:prompt + 4])
    stops = [row0[-3:-1] if len(row0) > 3 else row0, row1]
    cases = []
    for extra in ({}, {"num_beams": 3}):
        cfg = {"do_sample": False, "max_new_tokens": 16, "pad_token_id": 0, "eos_token_id": None,
               "stop_strings": stops}
        cfg.update(extra)
        with torch.no_grad():
            rows = model.generate(ids, attention_mask=mask, tokenizer=tok,
                                  generation_config=GenerationConfig(**cfg))
        cases.append({"generation_config": cfg, "output": rows.tolist()})
    return {"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "plain": plain.tolist(),
            "cases": cases}


def main():
    data = sys.argv[1]
    out = {name: criterion_cases(f"{data}/tokenizers/{name}") for name in ("qwen3", "spm-llama2")}
    out["generate"] = generate_cases(data)
    with open(f"{data}/extra/stop_strings.json", "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print("ok", {k: len(v["hits"]) for k, v in out.items() if "hits" in v})


if __name__ == "__main__":
    main()
