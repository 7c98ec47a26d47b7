#!/usr/bin/env python3
"""Parity fixtures for IBM's Granite decoders, whose four multipliers every path must apply:
- granite-tiny (GraniteForCausalLM): embedding_multiplier 12, attention_multiplier 0.2 (not
  head_dim^-0.5), residual_multiplier 0.22, logits_scaling 8, attention and MLP biases, tied
  embeddings;
- granitemoe-tiny (GraniteMoeForCausalLM): the same multipliers, 4 experts, 2 a token, stored
  as Granite stores them (block_sparse_moe.input_linear [experts, 2 x width, hidden], gate rows
  first; output_linear; router.layer);
- granitemoeshared-tiny (GraniteMoeSharedForCausalLM): plus an ungated shared MLP
  (shared_mlp.input_linear / output_linear);
and as llama.cpp's converter writes them (GGUF only, with their own transformers goldens):
granite-gguf-tiny (arch granite, q/k permuted, the multipliers as embedding_scale,
residual_scale, attention.scale and logit_scale) and granitemoe-gguf-tiny (arch granitemoe,
input_linear split into ffn_gate_exps / ffn_up_exps, the shared MLP into ffn_gate_shexp /
ffn_up_shexp / ffn_down_shexp).
Made with transformers 5.25 (torch CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_granite_goldens.py OUT_DIR
"""
import json
import os
import sys

import numpy as np
import torch
from gguf import GGUFWriter
from transformers import (GraniteConfig, GraniteForCausalLM, GraniteMoeConfig,
                          GraniteMoeForCausalLM, GraniteMoeSharedConfig,
                          GraniteMoeSharedForCausalLM)

sys.path.insert(0, os.path.dirname(__file__))
from make_moe_goldens import scale_moe, write  # noqa: E402
from make_rope_goldens import write_gguf_fixture  # noqa: E402
from make_tiny_ggufs import (NAMES, add_placeholder_vocab, add_shape_keys, gguf_name,  # noqa: E402
                             load_tensors, permute)

GRANITE_NAMES = dict(NAMES, **{
    "block_sparse_moe.router.layer.weight": "ffn_gate_inp.weight",
    "shared_mlp.output_linear.weight": "ffn_down_shexp.weight"})
MULTIPLIERS = dict(embedding_multiplier=12.0, attention_multiplier=0.2, residual_multiplier=0.22,
                   logits_scaling=8.0)


def granite_gguf(arch):
    """write(model_dir, out) for write_gguf_fixture: the folder as llama.cpp's GraniteModel /
    GraniteMoeModel lay it out."""
    def write_file(model_dir, out):
        cfg = json.load(open(f"{model_dir}/config.json"))
        w = GGUFWriter(out, arch)
        add_shape_keys(w, cfg)
        w.add_embedding_scale(cfg["embedding_multiplier"])
        w.add_residual_scale(cfg["residual_multiplier"])
        w.add_attention_scale(cfg["attention_multiplier"])
        w.add_logit_scale(cfg["logits_scaling"])
        if arch == "granitemoe":
            w.add_expert_count(cfg["num_local_experts"])
            w.add_expert_used_count(cfg["num_experts_per_tok"])
            if cfg.get("shared_intermediate_size"):
                w.add_expert_shared_feed_forward_length(cfg["shared_intermediate_size"])
        add_placeholder_vocab(w, cfg)
        for hf, t in load_tensors(model_dir).items():
            layer = hf.split(".")[2] if hf.startswith("model.layers.") else None
            if hf.endswith("block_sparse_moe.input_linear.weight"):  # [experts, 2 x width, hidden]
                half = t.shape[1] // 2
                w.add_tensor(f"blk.{layer}.ffn_gate_exps.weight", np.ascontiguousarray(t[:, :half]))
                w.add_tensor(f"blk.{layer}.ffn_up_exps.weight", np.ascontiguousarray(t[:, half:]))
                continue
            if hf.endswith("block_sparse_moe.output_linear.weight"):
                w.add_tensor(f"blk.{layer}.ffn_down_exps.weight", np.ascontiguousarray(t))
                continue
            if hf.endswith("shared_mlp.input_linear.weight"):  # [2 x width, hidden]
                half = t.shape[0] // 2
                w.add_tensor(f"blk.{layer}.ffn_gate_shexp.weight", np.ascontiguousarray(t[:half]))
                w.add_tensor(f"blk.{layer}.ffn_up_shexp.weight", np.ascontiguousarray(t[half:]))
                continue
            if hf.endswith("q_proj.weight"):
                t = permute(t, cfg["num_attention_heads"])
            if hf.endswith("k_proj.weight"):
                t = permute(t, cfg["num_key_value_heads"])
            w.add_tensor(gguf_name(hf, GRANITE_NAMES), np.ascontiguousarray(t.astype(np.float32)))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    return write_file


def check_stacked(folder):
    """The saved checkpoint holds Granite's own stacked names (what the Hub's files hold)."""
    names = load_tensors(folder).keys()
    assert any(n.endswith("block_sparse_moe.input_linear.weight") for n in names), sorted(names)
    assert any(n.endswith("block_sparse_moe.router.layer.weight") for n in names), sorted(names)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    common = dict(vocab_size=300, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                  pad_token_id=0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                  **MULTIPLIERS)

    cfg = GraniteConfig(**common, intermediate_size=96, num_hidden_layers=2, attention_bias=True,
                        mlp_bias=True, tie_word_embeddings=True)
    write(GraniteForCausalLM(cfg), out, "granite-tiny")

    cfg = GraniteMoeConfig(**common, intermediate_size=32, num_hidden_layers=2,
                           num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=False)
    write(GraniteMoeForCausalLM(cfg), out, "granitemoe-tiny")
    check_stacked(f"{out}/granitemoe-tiny/model")

    cfg = GraniteMoeSharedConfig(**common, intermediate_size=32, num_hidden_layers=2,
                                 num_local_experts=4, num_experts_per_tok=2,
                                 shared_intermediate_size=40, tie_word_embeddings=True)
    write(GraniteMoeSharedForCausalLM(cfg), out, "granitemoeshared-tiny")
    check_stacked(f"{out}/granitemoeshared-tiny/model")

    cfg = GraniteConfig(**common, intermediate_size=96, num_hidden_layers=2,
                        tie_word_embeddings=False)
    write_gguf_fixture(GraniteForCausalLM(cfg), f"{out}/granite-gguf-tiny", scale_moe,
                       granite_gguf("granite"))
    cfg = GraniteMoeSharedConfig(**common, intermediate_size=32, num_hidden_layers=2,
                                 num_local_experts=4, num_experts_per_tok=2,
                                 shared_intermediate_size=40, tie_word_embeddings=False)
    write_gguf_fixture(GraniteMoeSharedForCausalLM(cfg), f"{out}/granitemoe-gguf-tiny", scale_moe,
                       granite_gguf("granitemoe"))
    print("ok")


if __name__ == "__main__":
    main()
