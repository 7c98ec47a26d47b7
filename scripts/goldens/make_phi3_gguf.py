#!/usr/bin/env python3
"""Writes the Phi-3 fixture (tests/data/extra/phi3-longrope-window-tiny) as a GGUF file laid out
as llama.cpp's convert_hf_to_gguf.py lays out Phi-3 (Phi3MiniModel): arch phi3, qkv_proj as
attn_qkv, gate_up_proj as ffn_up (gate first), longrope as rope_factors_long / rope_factors_short
tensors with rope.scaling.original_context_length and rope.scaling.attn_factor (the attention
factor itself, sqrt(1 + ln(factor) / ln(original))), the window as attention.sliding_window.
The test compares the GGUF with the same transformers goldens as the safetensors folder.
Usage: make_phi3_gguf.py TESTS_DATA_DIR   (needs: pip install gguf numpy safetensors)"""
import json
import math
import os
import sys

import numpy as np
from gguf import GGUFWriter
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(__file__))
from make_tiny_ggufs import add_placeholder_vocab, gguf_name  # noqa: E402

NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def main():
    folder = f"{sys.argv[1]}/extra/phi3-longrope-window-tiny"
    cfg = json.load(open(f"{folder}/model/config.json"))
    tensors = load_file(f"{folder}/model/model.safetensors")
    w = GGUFWriter(f"{folder}/model.gguf", "phi3")
    heads = cfg["num_attention_heads"]
    head_dim = cfg["hidden_size"] // heads
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_rope_scaling_orig_ctx_len(cfg["original_max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(heads)
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_sliding_window(cfg["sliding_window"] or 0)
    scale = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
    w.add_rope_scaling_attn_factors(
        math.sqrt(1 + math.log(scale) / math.log(cfg["original_max_position_embeddings"])))
    add_placeholder_vocab(w, cfg)
    for hf, t in tensors.items():
        w.add_tensor(gguf_name(hf, NAMES), np.ascontiguousarray(t.astype(np.float32)))
    rope = cfg["rope_scaling"]
    w.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
    w.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
