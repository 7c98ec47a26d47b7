#!/usr/bin/env python3
"""Parity fixture for OLMo 2 (Olmo2ForCausalLM): no input norms, the attention's and the MLP's
outputs RMS-normalised before their residual adds, q and k normalised as whole projections
before RoPE. olmo2-tiny: GQA, attention biases, an untied head, the config in the Hub's style.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_olmo2_goldens.py OUT_DIR
"""
import os
import sys

import torch
from transformers import Olmo2Config, Olmo2ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_rope_goldens import write_fixture  # noqa: E402


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    cfg = Olmo2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, attention_bias=True,
                      rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    write_fixture(Olmo2ForCausalLM(cfg), out, "olmo2-tiny", hub=True, long=True)
    print("ok")


if __name__ == "__main__":
    main()
