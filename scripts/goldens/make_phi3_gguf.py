#!/usr/bin/env python3
"""Writes the Phi-3 fixture (tests/data/extra/phi3-longrope-window-tiny) as a GGUF file laid out
as llama.cpp's convert_hf_to_gguf.py lays out Phi-3 (Phi3MiniModel): arch phi3, qkv_proj as
attn_qkv, gate_up_proj as ffn_up (gate first), longrope as rope_factors_long / rope_factors_short
tensors with rope.scaling.original_context_length and rope.scaling.attn_factor (the attention
factor itself, sqrt(1 + ln(factor) / ln(original))), the window as attention.sliding_window.
The test compares the GGUF with the same transformers goldens as the safetensors folder. Also
phi3-partial-tiny (Phi-4-mini's shape): its partial rotary factor as rope.dimension_count below
the head size, the longrope factors one per rotated pair, the head tied to token_embd; and that
fixture again with Q8_0 matrices (model-q8_0.gguf) and transformers' logits for those matrices
dequantized (golden-q8_0.safetensors; needs torch and transformers too).
Usage: make_phi3_gguf.py TESTS_DATA_DIR   (needs: pip install gguf numpy safetensors)"""
import json
import math
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, quants
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


def write(folder, file="model.gguf", q8_0=False):
    """The fixture as a GGUF; with q8_0 its matrices with rows of whole 32-value blocks (not
    the embedding) as Q8_0."""
    cfg = json.load(open(f"{folder}/model/config.json"))
    tensors = load_file(f"{folder}/model/model.safetensors")
    w = GGUFWriter(f"{folder}/{file}", "phi3")
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
    w.add_rope_dimension_count(int(head_dim * cfg.get("partial_rotary_factor", 1.0)))
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_sliding_window(cfg.get("sliding_window") or 0)
    scale = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
    w.add_rope_scaling_attn_factors(
        math.sqrt(1 + math.log(scale) / math.log(cfg["original_max_position_embeddings"])))
    add_placeholder_vocab(w, cfg)
    for hf, t in tensors.items():
        t = np.ascontiguousarray(t.astype(np.float32))
        if q8_0 and t.ndim == 2 and "embed" not in hf and t.shape[1] % 32 == 0:
            w.add_tensor(gguf_name(hf, NAMES), quants.quantize(t, GGMLQuantizationType.Q8_0),
                         raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(gguf_name(hf, NAMES), t)
    rope = cfg["rope_scaling"]
    w.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
    w.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    for name in ("phi3-longrope-window-tiny", "phi3-partial-tiny"):
        write(f"{sys.argv[1]}/extra/{name}")
    # Partial rotary's q/k row reordering on quantized rows.
    write(f"{sys.argv[1]}/extra/phi3-partial-tiny", "model-q8_0.gguf", q8_0=True)
    dequantized_logits(f"{sys.argv[1]}/extra/phi3-partial-tiny", "model-q8_0.gguf")


def dequantized_logits(folder, file):
    """golden-q8_0.safetensors: transformers' float32 logits of input_ids_a with the Q8_0
    file's matrices dequantized into the model, what anvil's Q8_0 run approximates (up to its
    int8 activations)."""
    import torch
    from gguf import GGUFReader
    from safetensors.torch import load_file as load_torch, save_file
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(f"{folder}/model", dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    hf_names = {v.removesuffix(".weight"): k.removesuffix(".weight") for k, v in NAMES.items()}
    state = model.state_dict()
    for t in GGUFReader(f"{folder}/{file}").tensors:
        if t.tensor_type != GGMLQuantizationType.Q8_0:
            continue
        if t.name == "output.weight":
            name = "lm_head.weight"
        else:
            _, layer, kind, _ = t.name.split(".")
            name = f"model.layers.{layer}.{hf_names[kind]}.weight"
        values = quants.dequantize(t.data, t.tensor_type).reshape(tuple(state[name].shape))
        state[name].copy_(torch.from_numpy(np.ascontiguousarray(values)))
    ids = load_torch(f"{folder}/golden.safetensors")["input_ids_a"]
    with torch.no_grad():
        logits = model(ids).logits
    save_file({"input_ids_a": ids, "logits_a": logits.contiguous()},
              f"{folder}/golden-q8_0.safetensors")


if __name__ == "__main__":
    main()
