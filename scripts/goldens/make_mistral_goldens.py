#!/usr/bin/env python3
"""Parity fixture for MistralForCausalLM: Llama's layers without biases, attention over a
sliding window (here 6 positions, so every input reaches past it: the 11-token prompt, the
left-padded batch, the 200-token input and the generations), head_dim given apart from
hidden_size / heads. Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention);
same golden layout as make_extra_goldens.py, plus gen_a.
Usage: make_mistral_goldens.py OUT_DIR
"""
import os
import sys

import torch
from transformers import MistralConfig, MistralForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_rope_goldens import write_fixture  # noqa: E402


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    name = "mistral-window-tiny"
    cfg = MistralConfig(vocab_size=288, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                        rms_norm_eps=1e-5, tie_word_embeddings=False,
                        max_position_embeddings=512, sliding_window=6, bos_token_id=1,
                        eos_token_id=2, pad_token_id=0, rope_theta=10000.0)
    write_fixture(MistralForCausalLM(cfg), out, name, long=True)
    print("ok")


if __name__ == "__main__":
    main()
