#!/usr/bin/env python3
"""The Gemma family as GGUF files laid out as llama.cpp's converter lays them out
(conversion/gemma.py): arch gemma / gemma2 / gemma3, every norm weight stored as 1 + w, Gemma 2 /
3's post_attention_norm, ffn_norm (the pre-feedforward norm) and post_ffw_norm, softcaps as
{arch}.attn_logit_softcapping / final_logit_softcapping, the window as attention.sliding_window,
and for Gemma 3 attention.sliding_window_pattern and rope.freq_base_swa (which llama.cpp reads;
its defaults are 6 and 1e4) beside a linear rope.scaling on the full layers.
- extra/gemma-tiny/model.gguf from that fixture (its goldens);
- extra/gemma2-gguf-tiny and extra/gemma3-gguf-tiny: new models whose query_pre_attn_scalar is
  head_dim, since a GGUF has no key for it (llama.cpp uses 1/sqrt(head_dim), or the 27B rule),
  with transformers 5.25 goldens (make_extra_goldens.py's layout plus gen_a / gen_long_a) and the
  GGUF only (no safetensors copy).
Usage: make_gemma_gguf.py TESTS_DATA_DIR   (needs: pip install gguf numpy safetensors torch
transformers)"""
import os
import sys

import torch
from gguf import RopeScalingType
from transformers import Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, os.path.dirname(__file__))
from make_gemma_goldens import scale_gemma_weights  # noqa: E402
from make_rope_goldens import write_gguf_fixture  # noqa: E402
from make_tiny_ggufs import NAMES, write_gguf  # noqa: E402

# llama.cpp's per-layer names as make_tiny_ggufs.py maps them (post_attention_layernorm is the
# MLP's input norm, ffn_norm, in Gemma 1), and Gemma 2 / 3's four norms.
GEMMA1 = NAMES
SANDWICH = dict(NAMES, **{"post_attention_layernorm.weight": "post_attention_norm.weight",
                          "pre_feedforward_layernorm.weight": "ffn_norm.weight",
                          "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})


def write(arch, keys=None):
    """write_gguf for a Gemma architecture: its norm weights as 1 + w (GemmaModel /
    Gemma2Model / Gemma3Model.modify_tensors), its layer names, its keys."""
    names = GEMMA1 if arch == "gemma" else SANDWICH
    plus_one = lambda hf, t: t + 1 if hf.endswith("norm.weight") else t  # noqa: E731
    return lambda model_dir, out: write_gguf(model_dir, out, arch, names, keys, plus_one)


def gemma2_keys(w, cfg):
    w.add_attn_logit_softcapping(cfg["attn_logit_softcapping"])
    w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
    w.add_sliding_window(cfg["sliding_window"])


def gemma3_keys(w, cfg):
    rope = cfg["rope_parameters"]
    w.add_sliding_window(cfg["sliding_window"])
    w.add_uint32("gemma3.attention.sliding_window_pattern", 3)
    w.add_float32("gemma3.rope.freq_base_swa", rope["sliding_attention"]["rope_theta"])
    w.add_rope_scaling_type(RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(rope["full_attention"]["factor"])
    w.add_final_logit_softcapping(cfg["final_logit_softcapping"])


def main():
    data = sys.argv[1]
    torch.manual_seed(5)
    write("gemma")(f"{data}/extra/gemma-tiny/model", f"{data}/extra/gemma-tiny/model.gguf")

    cfg = Gemma2Config(vocab_size=290, hidden_size=64, intermediate_size=112, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       query_pre_attn_scalar=16, sliding_window=5, attn_logit_softcapping=2.0,
                       final_logit_softcapping=4.0, rms_norm_eps=1e-6,
                       max_position_embeddings=512, bos_token_id=2, eos_token_id=1,
                       pad_token_id=0)
    write_gguf_fixture(Gemma2ForCausalLM(cfg), f"{data}/extra/gemma2-gguf-tiny",
                       scale_gemma_weights, write("gemma2", gemma2_keys))

    cfg = Gemma3TextConfig(vocab_size=270, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=1,
                           head_dim=32, query_pre_attn_scalar=32, sliding_window=6,
                           sliding_window_pattern=3, final_logit_softcapping=5.0,
                           rms_norm_eps=1e-6, max_position_embeddings=512, bos_token_id=2,
                           eos_token_id=1, pad_token_id=0,
                           rope_parameters={
                               "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                  "rope_theta": 100000.0},
                               "sliding_attention": {"rope_type": "default",
                                                     "rope_theta": 1000.0}})
    write_gguf_fixture(Gemma3ForCausalLM(cfg), f"{data}/extra/gemma3-gguf-tiny",
                       scale_gemma_weights, write("gemma3", gemma3_keys))


if __name__ == "__main__":
    main()
