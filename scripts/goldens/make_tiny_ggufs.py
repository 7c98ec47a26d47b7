#!/usr/bin/env python3
"""Writes the tiny transformers fixtures (tests/data/{qwen3,llama,qwen2}-tiny) as GGUF files the
way llama.cpp's convert_hf_to_gguf.py lays them out: llama.cpp tensor names, {arch}.* metadata,
and for Llama the q/k rows permuted for interleaved RoPE. Also the llama3-scaled extra fixture, with
llama.cpp's rope_freqs.weight. The tests load them and compare with the same transformers goldens as the safetensors folders, which checks the GGUF name mapping, the
un-permutation and the metadata reading for every architecture.
Usage: make_tiny_ggufs.py TESTS_DATA_DIR   (needs: pip install gguf numpy safetensors)"""
import json
import os
import sys

import numpy as np
from gguf import GGUFWriter
from safetensors.numpy import load_file

NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "self_attn.o_proj.bias": "attn_output.bias",
    "mlp.gate_proj.bias": "ffn_gate.bias",
    "mlp.up_proj.bias": "ffn_up.bias",
    "mlp.down_proj.bias": "ffn_down.bias",
}


def permute(w, n_head):
    """llama.cpp's LlamaModel.permute."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_tensors(folder):
    index = f"{folder}/model.safetensors.index.json"
    if not os.path.exists(index):
        return load_file(f"{folder}/model.safetensors")
    tensors = {}
    for shard in sorted(set(json.load(open(index))["weight_map"].values())):
        tensors.update(load_file(f"{folder}/{shard}"))
    return tensors


def llama3_rope_factors(cfg, head_dim):
    """What llama.cpp's converter stores as rope_freqs.weight for Llama 3.1 scaling."""
    s = cfg["rope_scaling"]
    base = cfg["rope_theta"]
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    out = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def add_placeholder_vocab(w, cfg):
    """A placeholder byte-level vocabulary of the model's size (the fixtures have no tokenizer)."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt2")
    w.add_token_list([f"tok{i}" for i in range(cfg["vocab_size"])])
    w.add_token_types([1] * cfg["vocab_size"])
    w.add_token_merges([])
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_pad_token_id(cfg["pad_token_id"])


def gguf_name(hf, names):
    """llama.cpp's name for the Hugging Face tensor `hf`; `names` maps the per-layer ones."""
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")
    return f"blk.{parts[2]}." + names[".".join(parts[3:])]


def add_shape_keys(w, cfg):
    """The {arch}.* keys every architecture's converter writes: sizes, heads, head size, the
    norms' epsilon, the RoPE base (the full layers' where the config has one per layer type)."""
    heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    rope = cfg.get("rope_parameters") or {"rope_theta": cfg.get("rope_theta", 10000.0)}
    w.add_rope_freq_base(rope.get("full_attention", rope)["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])


def write_gguf(model_dir, out, arch, names, keys=None, transform=None, extra_tensors=None):
    """The safetensors folder `model_dir` as a GGUF of `arch`: add_shape_keys, then keys(w, cfg)
    for the architecture's own, a placeholder vocabulary, every tensor under its llama.cpp name
    (`names` for the per-layer ones) as F32 after transform(hf_name, array), then
    extra_tensors."""
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = GGUFWriter(out, arch)
    add_shape_keys(w, cfg)
    if keys:
        keys(w, cfg)
    add_placeholder_vocab(w, cfg)
    for hf, t in load_tensors(model_dir).items():
        if transform:
            t = transform(hf, t)
        w.add_tensor(gguf_name(hf, names), np.ascontiguousarray(t.astype(np.float32)))
    for name, t in (extra_tensors or {}).items():
        w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out, os.path.getsize(out))


def permute_qk(cfg):
    """transform for write_gguf: Llama's q/k rows permuted as LlamaModel.permute does."""
    def transform(hf, t):
        if hf.endswith("q_proj.weight") or hf.endswith("q_proj.bias"):
            return permute(t, cfg["num_attention_heads"])
        if hf.endswith("k_proj.weight") or hf.endswith("k_proj.bias"):
            return permute(t, cfg["num_key_value_heads"])
        return t
    return transform


def main():
    data = sys.argv[1]
    for name, arch in [("qwen3-tiny", "qwen3"), ("llama-tiny", "llama"), ("qwen2-tiny", "qwen2"),
                       ("extra/llama3-bias-tiny", "llama")]:
        folder = f"{data}/{name}/model"
        cfg = json.load(open(f"{folder}/config.json"))
        extra = {}
        if (cfg.get("rope_scaling") or {}).get("rope_type") == "llama3":
            extra["rope_freqs.weight"] = llama3_rope_factors(cfg, cfg["head_dim"])
        write_gguf(folder, f"{data}/{name}/model.gguf", arch, NAMES,
                   transform=permute_qk(cfg) if arch == "llama" else None, extra_tensors=extra)


if __name__ == "__main__":
    main()
