#!/usr/bin/env python3
"""transformers' last hidden states (the base model's last_hidden_state: after the final norm),
for CausalLM::hidden_states and `anvil embed`. On five fixtures (qwen3-tiny, qwen2-tiny,
llama-tiny, gemma3-text-tiny, olmo2-tiny), float32, eager attention: prompt a alone and the
left-padded batch b of their goldens. Then two base models' checkpoints, saved from the base
model's class (Qwen3Model, Qwen2Model: names without "model.", no lm_head; qwen2-tiny's head is
untied, so its base checkpoint has none), with their hidden states for prompt a, loaded back by
transformers' AutoModel.
Writes tests/data/extra/hidden-states.safetensors ("<fixture>/a", "<fixture>/b") and
tests/data/extra/base-qwen3-tiny/, base-qwen2-tiny/ (model/ and golden.safetensors: input_ids_a,
hidden_a).
Usage: make_hidden_state_goldens.py TESTS_DATA_DIR"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoModelForCausalLM

FIXTURES = ["qwen3-tiny", "qwen2-tiny", "llama-tiny", "extra/gemma3-text-tiny", "extra/olmo2-tiny"]
BASES = ["qwen3-tiny", "qwen2-tiny"]


def load(path):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32,
                                                attn_implementation="eager")


def main():
    data = sys.argv[1]
    out = {}
    for name in FIXTURES:
        model = load(f"{data}/{name}/model")
        g = load_file(f"{data}/{name}/golden.safetensors")
        with torch.no_grad():
            out[f"{name}/a"] = model.model(input_ids=g["input_ids_a"]).last_hidden_state.contiguous()
            out[f"{name}/b"] = model.model(input_ids=g["input_ids_b"],
                                           attention_mask=g["attention_mask_b"]
                                           ).last_hidden_state.contiguous()
    save_file(out, f"{data}/extra/hidden-states.safetensors")
    for name in BASES:
        model = load(f"{data}/{name}/model")
        dst = f"{data}/extra/base-{name}"
        model.model.save_pretrained(f"{dst}/model")
        base = AutoModel.from_pretrained(f"{dst}/model", dtype=torch.float32,
                                         attn_implementation="eager")
        ids = load_file(f"{data}/{name}/golden.safetensors")["input_ids_a"]
        with torch.no_grad():
            hidden = base(input_ids=ids).last_hidden_state.contiguous()
        save_file({"input_ids_a": ids, "hidden_a": hidden}, f"{dst}/golden.safetensors")
        print(name, sorted(os.listdir(f"{dst}/model")))


if __name__ == "__main__":
    main()
