#!/usr/bin/env python3
"""Checks that a folder written by `anvil convert` loads in transformers and gives what
transformers gives for the original GGUF (tests/data/gguf_smollm2/golden.json): logits,
greedy continuations, tokenizer ids, chat template.
Usage: check_convert_in_transformers.py CONVERTED_DIR GOLDEN_JSON"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

folder, golden_path = sys.argv[1:3]
g = json.load(open(golden_path))
tok = AutoTokenizer.from_pretrained(folder)
model, info = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                   output_loading_info=True)
assert not any(info.values()), info
model.eval()
with torch.no_grad():
    logits = model(torch.tensor([g["logits_prompt_ids"]])).logits[0]
diff = (logits[:, :64] - torch.tensor(g["logits_first_64"])).abs().max().item()
print(f"max |logit - transformers(GGUF)| over the golden entries: {diff:.3g}")
assert logits.argmax(-1).tolist() == g["logits_argmax"]
bad = [c["text"] for c in g["tokenizer"] if tok(c["text"])["input_ids"] != c["ids"]]
print("tokenizer mismatches:", bad)
for c in g["chats"]:
    text = tok.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=True)
    assert text == c["text"], (text, c["text"])
    ids = torch.tensor([c["prompt_ids"]])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=32, do_sample=False,
                             attention_mask=torch.ones_like(ids))
    print("greedy continuation equal:", out[0].tolist() == c["output_ids"])
print("ok" if diff < 1e-4 and not bad else "MISMATCH")
