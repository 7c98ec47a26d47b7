#!/usr/bin/env python3
"""Parity fixture for Phi3ForCausalLM: q/k/v fused in qkv_proj and gate/up in gate_up_proj,
longrope (short and long factors per frequency, switched per forward when the sequence passes
original_max_position_embeddings 32, the attention factor derived from max_position_embeddings
128 over it) and a sliding window of 10. Made with transformers 5.25 (torch 2.15, CPU, float32,
eager attention); same golden layout as make_extra_goldens.py, plus gen_a and gen_long_a (40
greedy tokens from the 11-token prompt: the factors switch to the long set mid-generation).
A second fixture, phi3-partial-tiny, is shaped as Phi-4-mini: partial_rotary_factor 0.75 (12 of
each head's 16 dimensions rotate, longrope's factors one per rotated pair), tied embeddings, no
window.
Usage: make_phi3_goldens.py OUT_DIR
"""
import os
import sys

import torch
from transformers import Phi3Config, Phi3ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_rope_goldens import write_fixture  # noqa: E402


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    half = 8  # head_dim 16
    short = (1.0 + torch.rand(half, generator=g)).tolist()
    long = (1.0 + 6.0 * torch.rand(half, generator=g)).tolist()
    name = "phi3-longrope-window-tiny"
    cfg = Phi3Config(vocab_size=320, hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                     tie_word_embeddings=False, max_position_embeddings=128,
                     original_max_position_embeddings=32, sliding_window=10, bos_token_id=1,
                     eos_token_id=2, pad_token_id=0,
                     rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                      "short_factor": short, "long_factor": long})
    write_fixture(Phi3ForCausalLM(cfg), out, name, hub=True, long=True)

    rotated_half = 6  # head_dim 16, partial_rotary_factor 0.75
    short = (1.0 + torch.rand(rotated_half, generator=g)).tolist()
    long = (1.0 + 6.0 * torch.rand(rotated_half, generator=g)).tolist()
    cfg = Phi3Config(vocab_size=320, hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                     tie_word_embeddings=True, max_position_embeddings=128,
                     original_max_position_embeddings=32, sliding_window=None, bos_token_id=1,
                     eos_token_id=2, pad_token_id=0, partial_rotary_factor=0.75,
                     rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                      "short_factor": short, "long_factor": long,
                                      "partial_rotary_factor": 0.75})
    write_fixture(Phi3ForCausalLM(cfg), out, "phi3-partial-tiny", hub=True, long=True)
    print("ok")


if __name__ == "__main__":
    main()
