#!/usr/bin/env python3
"""Parity fixtures for sparse mixture-of-experts decoders:
- qwen3-moe-tiny (Qwen3MoeForCausalLM): 8 experts, 2 a token, norm_topk_prob, layer 1 dense
  (mlp_only_layers), q/k norms, config in the Hub's older style;
- qwen2-moe-tiny (Qwen2MoeForCausalLM): 6 experts, 2 a token, not renormalised, a shared
  expert behind its sigmoid gate, decoder_sparse_step 2 (layers 1 and 3 sparse), q/k/v biases;
- mixtral-tiny (MixtralForCausalLM): 4 experts, 2 a token, a sliding window of 7;
- olmoe-tiny (OlmoeForCausalLM): 8 experts, 3 a token, q and k normalised as whole
  projections.
Expert weights are drawn like the dense ones (scale by fan-in) so every expert matters.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_moe_goldens.py OUT_DIR
"""
import os
import sys

import torch
from transformers import (MixtralConfig, MixtralForCausalLM, OlmoeConfig, OlmoeForCausalLM,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import goldens, hub_style  # noqa: E402
from make_rope_goldens import with_gen_a  # noqa: E402


def scale_moe(model):
    """scale_weights for MoE models: transformers 5 holds the experts as 3D parameters
    ([experts, out, in]), scaled by their fan-in like the 2D ones."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif p.dim() >= 2:
                p.copy_(torch.randn_like(p) * (1.5 / p.shape[-1] ** 0.5))
            else:
                p.copy_(0.2 * torch.randn_like(p))


def write(model, out, name, hub=False):
    scale_moe(model)
    model.save_pretrained(f"{out}/{name}/model")
    if hub:
        hub_style(f"{out}/{name}/model/config.json")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
    with_gen_a(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors", long=True)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    common = dict(vocab_size=300, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    rope = {"rope_type": "default", "rope_theta": 10000.0}

    cfg = Qwen3MoeConfig(**common, intermediate_size=96, moe_intermediate_size=32,
                         num_hidden_layers=3, head_dim=16, num_experts=8, num_experts_per_tok=2,
                         norm_topk_prob=True, mlp_only_layers=[1], rope_parameters=rope)
    write(Qwen3MoeForCausalLM(cfg), out, "qwen3-moe-tiny", hub=True)

    cfg = Qwen2MoeConfig(**common, intermediate_size=96, moe_intermediate_size=24,
                         shared_expert_intermediate_size=40, num_hidden_layers=4, num_experts=6,
                         num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=2,
                         rope_parameters=rope)
    write(Qwen2MoeForCausalLM(cfg), out, "qwen2-moe-tiny")

    cfg = MixtralConfig(**common, intermediate_size=48, num_hidden_layers=2, num_local_experts=4,
                        num_experts_per_tok=2, sliding_window=7,
                        rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    write(MixtralForCausalLM(cfg), out, "mixtral-tiny")

    cfg = OlmoeConfig(**common, intermediate_size=32, num_hidden_layers=2, num_experts=8,
                      num_experts_per_tok=3, rope_parameters=rope)
    write(OlmoeForCausalLM(cfg), out, "olmoe-tiny")
    print("ok")


if __name__ == "__main__":
    main()
