#!/usr/bin/env python3
"""Parity fixtures for SmolLM3 (SmolLM3ForCausalLM): Llama's layer where some layers skip RoPE.
- smollm3-nope-tiny: NoPE on every 2nd layer from no_rope_layer_interval (the config rewritten
  in the Hub's style: no_rope_layers dropped, rope_theta at the top), attention biases, GQA, a
  tied head;
- smollm3-window-tiny: no_rope_layers [1, 0, 0, 1] and use_sliding_window with a window of 5,
  which SmolLM3Config puts on the NoPE layers; MLP biases, an untied head;
- smollm3-gguf-tiny: the default interval of 4 (llama.cpp's, which it does not store) over 5
  layers, written as llama.cpp's converter writes SmolLM3 (LlamaModel: q/k rows permuted), with
  its transformers goldens and the GGUF only.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_smollm3_goldens.py OUT_DIR
"""
import json
import os
import sys

import torch
from transformers import SmolLM3Config, SmolLM3ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import scale_weights  # noqa: E402
from make_rope_goldens import write_fixture, write_gguf_fixture  # noqa: E402
from make_tiny_ggufs import NAMES, permute_qk, write_gguf  # noqa: E402


def hub_style(path):
    with open(path) as f:
        c = json.load(f)
    c.pop("no_rope_layers")
    c.pop("layer_types")
    rope = c.pop("rope_parameters")
    c["rope_theta"] = rope["rope_theta"]
    c["rope_scaling"] = None
    c["torch_dtype"] = c.pop("dtype", "float32")
    with open(path, "w") as f:
        json.dump(c, f, indent=2)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    cfg = SmolLM3Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                        num_attention_heads=4, num_key_value_heads=2, no_rope_layer_interval=2,
                        attention_bias=True, rms_norm_eps=1e-6, tie_word_embeddings=True,
                        max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                        pad_token_id=0,
                        rope_parameters={"rope_type": "default", "rope_theta": 5000.0})
    assert cfg.no_rope_layers == [1, 0, 1, 0]
    write_fixture(SmolLM3ForCausalLM(cfg), out, "smollm3-nope-tiny", long=True,
                  edit_config=hub_style)

    cfg = SmolLM3Config(vocab_size=280, hidden_size=96, intermediate_size=80, num_hidden_layers=4,
                        num_attention_heads=6, num_key_value_heads=2, no_rope_layers=[1, 0, 0, 1],
                        use_sliding_window=True, sliding_window=5, mlp_bias=True,
                        rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    assert cfg.layer_types == ["full_attention", "sliding_attention", "sliding_attention",
                               "full_attention"]
    write_fixture(SmolLM3ForCausalLM(cfg), out, "smollm3-window-tiny", long=True)

    cfg = SmolLM3Config(vocab_size=260, hidden_size=64, intermediate_size=96, num_hidden_layers=5,
                        num_attention_heads=4, num_key_value_heads=1, rms_norm_eps=1e-6,
                        tie_word_embeddings=True, max_position_embeddings=512, bos_token_id=1,
                        eos_token_id=2, pad_token_id=0)
    assert cfg.no_rope_layers == [1, 1, 1, 0, 1]
    write = lambda model_dir, out: write_gguf(  # noqa: E731  (LlamaModel's permuted q/k)
        model_dir, out, "smollm3", NAMES, transform=permute_qk(cfg.to_dict()))
    write_gguf_fixture(SmolLM3ForCausalLM(cfg), f"{out}/smollm3-gguf-tiny", scale_weights, write)
    print("ok")


if __name__ == "__main__":
    main()
