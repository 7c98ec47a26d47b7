#!/usr/bin/env python3
"""Parity fixture for OLMo 2 (Olmo2ForCausalLM): no input norms, the attention's and the MLP's
outputs RMS-normalised before their residual adds, q and k normalised as whole projections
before RoPE. olmo2-tiny: GQA, attention biases, an untied head, the config in the Hub's style;
olmo2-gguf-tiny: a model without biases (llama.cpp's olmo2 reads none) written as llama.cpp's
converter writes OLMo 2 (no permutation: it rotates half-split), with its transformers goldens
and the GGUF only.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_olmo2_goldens.py OUT_DIR
"""
import os
import sys

import torch
from transformers import Olmo2Config, Olmo2ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import scale_weights  # noqa: E402
from make_rope_goldens import write_fixture, write_gguf_fixture  # noqa: E402
from make_tiny_ggufs import NAMES, write_gguf  # noqa: E402

OLMO2 = dict(NAMES, **{"post_attention_layernorm.weight": "post_attention_norm.weight",
                       "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    cfg = Olmo2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, attention_bias=True,
                      rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    write_fixture(Olmo2ForCausalLM(cfg), out, "olmo2-tiny", hub=True, long=True)

    cfg = Olmo2Config(vocab_size=270, hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, rms_norm_eps=1e-6,
                      tie_word_embeddings=False, max_position_embeddings=512, bos_token_id=1,
                      eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    write = lambda model_dir, out: write_gguf(model_dir, out, "olmo2", OLMO2)  # noqa: E731
    write_gguf_fixture(Olmo2ForCausalLM(cfg), f"{out}/olmo2-gguf-tiny", scale_weights, write)
    print("ok")


if __name__ == "__main__":
    main()
