#!/usr/bin/env python3
"""Parity fixtures for sliding windows on some layers only, as Qwen2Config and Qwen3Config set
them up: qwen2-window-layers-tiny (use_sliding_window, a window of 5 on the layers from
max_window_layers = 1 on; the config rewritten in the Hub's older style, without the
layer_types transformers 5 saves, so the layers come from max_window_layers) and
qwen3-window-types-tiny (layer_types naming layers 0 and 2 "sliding_attention", a window of 7).
Every input and generation reaches past the windows.

Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); same golden layout as
make_mistral_goldens.py (gen_a, gen_long_a).
Usage: make_window_goldens.py OUT_DIR
"""
import json
import os
import sys

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_rope_goldens import write_fixture  # noqa: E402


def drop_layer_types(config_path):
    with open(config_path) as f:
        c = json.load(f)
    c.pop("layer_types")
    with open(config_path, "w") as f:
        json.dump(c, f, indent=2)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)

    name = "qwen2-window-layers-tiny"
    cfg = Qwen2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, max_position_embeddings=512,
                      use_sliding_window=True, sliding_window=5, max_window_layers=1,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    assert cfg.layer_types == ["full_attention", "sliding_attention", "sliding_attention"]
    write_fixture(Qwen2ForCausalLM(cfg), out, name, hub=True, long=True,
                  edit_config=drop_layer_types)

    name = "qwen3-window-types-tiny"
    cfg = Qwen3Config(vocab_size=280, hidden_size=64, intermediate_size=80, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                      rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                      use_sliding_window=True, sliding_window=7,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    write_fixture(Qwen3ForCausalLM(cfg), out, name, long=True)
    print("ok")


if __name__ == "__main__":
    main()
