#!/usr/bin/env python3
"""Parity fixtures for the Gemma family, each reaching past its windows and softcaps:
- gemma-tiny (GemmaForCausalLM): (1 + w) norms, the embedding scaled by sqrt(hidden_size),
  a GELU-gated MLP (the Hub's legacy hidden_act "gelu", which GemmaConfig reads as the tanh
  approximation), head_dim apart from hidden_size / heads, tied head;
- gemma2-tiny (Gemma2ForCausalLM): four norms a layer, attention scores and final logits
  softcapped (caps small enough to bite on these weights), query_pre_attn_scalar, a window of
  5 on the even layers (transformers 5's default layer_types);
- gemma3-text-tiny (Gemma3ForCausalLM): q/k norms, a window of 6 on layers 0-1 of 3 from the
  Hub's sliding_window_pattern 3, the sliding layers rotating with rope_local_base_freq and the
  full layer with rope_theta and linear rope_scaling (factor 2), config in the Hub's style.

Norm weights are drawn around 0 (Gemma stores w of (1 + w)). Made with transformers 5.25
(torch 2.15, CPU, float32, eager attention); the golden layout of make_window_goldens.py.
Usage: make_gemma_goldens.py OUT_DIR
"""
import json
import os
import sys

import torch
from transformers import (Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig,
                          GemmaConfig, GemmaForCausalLM)

sys.path.insert(0, os.path.dirname(__file__))
import make_rope_goldens  # noqa: E402
from make_extra_goldens import goldens  # noqa: E402
from weight_scaling import scale_gemma_weights  # noqa: E402


def write_gemma_fixture(model, out, name, edit_config=None):
    scale_gemma_weights(model)
    model.save_pretrained(f"{out}/{name}/model")
    if edit_config:
        edit_config(f"{out}/{name}/model/config.json")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
    make_rope_goldens.with_gen_a(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors",
                                 long=True)


def edit_json(path, fn):
    with open(path) as f:
        c = json.load(f)
    fn(c)
    with open(path, "w") as f:
        json.dump(c, f, indent=2)


def legacy_gelu(path):
    edit_json(path, lambda c: c.update(hidden_act="gelu"))


def gemma3_hub_style(path):
    def edit(c):
        rope = c.pop("rope_parameters")
        c["rope_theta"] = rope["full_attention"]["rope_theta"]
        c["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
        c["rope_scaling"] = {"rope_type": "linear", "factor": rope["full_attention"]["factor"]}
        c.pop("layer_types")
        c.pop("_sliding_window_pattern", None)
        c["sliding_window_pattern"] = 3
        c["torch_dtype"] = c.pop("dtype", "float32")
    edit_json(path, edit)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)

    cfg = GemmaConfig(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, head_dim=24,
                      rms_norm_eps=1e-6, max_position_embeddings=512, bos_token_id=2,
                      eos_token_id=1, pad_token_id=0)
    write_gemma_fixture(GemmaForCausalLM(cfg), out, "gemma-tiny", edit_config=legacy_gelu)

    cfg = Gemma2Config(vocab_size=320, hidden_size=64, intermediate_size=112, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       query_pre_attn_scalar=20, sliding_window=5, attn_logit_softcapping=2.0,
                       final_logit_softcapping=4.0, rms_norm_eps=1e-6,
                       max_position_embeddings=512, bos_token_id=2, eos_token_id=1,
                       pad_token_id=0)
    assert cfg.layer_types == ["sliding_attention", "full_attention", "sliding_attention"]
    write_gemma_fixture(Gemma2ForCausalLM(cfg), out, "gemma2-tiny")

    cfg = Gemma3TextConfig(vocab_size=310, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=32, query_pre_attn_scalar=24, sliding_window=6,
                           sliding_window_pattern=3, rms_norm_eps=1e-6,
                           max_position_embeddings=512, bos_token_id=2, eos_token_id=1,
                           pad_token_id=0,
                           rope_parameters={
                               "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                  "rope_theta": 100000.0},
                               "sliding_attention": {"rope_type": "default",
                                                     "rope_theta": 1000.0}})
    assert cfg.layer_types == ["sliding_attention", "sliding_attention", "full_attention"]
    write_gemma_fixture(Gemma3ForCausalLM(cfg), out, "gemma3-text-tiny",
                        edit_config=gemma3_hub_style)
    print("ok")


if __name__ == "__main__":
    main()
