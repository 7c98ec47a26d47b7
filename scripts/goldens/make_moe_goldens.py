#!/usr/bin/env python3
"""Parity fixtures for sparse mixture-of-experts decoders:
- qwen3-moe-tiny (Qwen3MoeForCausalLM): 8 experts, 2 a token, norm_topk_prob, layer 1 dense
  (mlp_only_layers), q/k norms, config in the Hub's older style;
- qwen2-moe-tiny (Qwen2MoeForCausalLM): 6 experts, 2 a token, not renormalised, a shared
  expert behind its sigmoid gate, decoder_sparse_step 2 (layers 1 and 3 sparse), q/k/v biases;
- mixtral-tiny (MixtralForCausalLM): 4 experts, 2 a token, a sliding window of 7;
- olmoe-tiny (OlmoeForCausalLM): 8 experts, 3 a token, q and k normalised as whole
  projections;
and as llama.cpp's converter writes them (GGUF only, with their own transformers goldens):
qwen3moe-gguf-tiny, qwen2moe-gguf-tiny (shared expert), mixtral-gguf-tiny (arch llama, q/k
permuted), olmoe-gguf-tiny: every layer sparse, a layer's experts stacked in
ffn_{gate,up,down}_exps ({in, out, experts}), the router as ffn_gate_inp, Qwen2-MoE's shared
expert as ffn_*_shexp and its gate as the vector ffn_gate_inp_shexp.
Expert weights are drawn like the dense ones (scale by fan-in) so every expert matters.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_moe_goldens.py OUT_DIR
"""
import json
import os
import re
import sys

import numpy as np
import torch
from gguf import GGUFWriter
from transformers import (MixtralConfig, MixtralForCausalLM, OlmoeConfig, OlmoeForCausalLM,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import goldens, hub_style  # noqa: E402
from weight_scaling import scale_moe  # noqa: E402
from make_rope_goldens import with_gen_a, write_gguf_fixture  # noqa: E402
from make_tiny_ggufs import (NAMES, add_placeholder_vocab, add_shape_keys, gguf_name,  # noqa: E402
                             load_tensors, permute)

MOE_NAMES = dict(NAMES, **{"mlp.gate.weight": "ffn_gate_inp.weight",
                           "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
                           "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
                           "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
                           "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
                           "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight"})
EXPERT = re.compile(r"model\.layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\."
                    r"(gate_proj|up_proj|down_proj|w1|w3|w2)\.weight")
STACKS = {"gate_proj": "ffn_gate_exps", "w1": "ffn_gate_exps", "up_proj": "ffn_up_exps",
          "w3": "ffn_up_exps", "down_proj": "ffn_down_exps", "w2": "ffn_down_exps"}


def moe_gguf(arch, permuted=False, shared=False, own_width=True):
    """write(model_dir, out) for write_gguf_fixture: the folder as llama.cpp lays out `arch`."""
    def write(model_dir, out):
        cfg = json.load(open(f"{model_dir}/config.json"))
        w = GGUFWriter(out, arch)
        add_shape_keys(w, cfg)
        experts = cfg.get("num_experts") or cfg.get("num_local_experts")
        w.add_expert_count(experts)
        w.add_expert_used_count(cfg["num_experts_per_tok"])
        if own_width:
            w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
        if shared:
            w.add_expert_shared_feed_forward_length(cfg["shared_expert_intermediate_size"])
        add_placeholder_vocab(w, cfg)
        stacks = {}
        for hf, t in load_tensors(model_dir).items():
            m = EXPERT.fullmatch(hf)
            if m:
                stacks.setdefault((int(m[1]), STACKS[m[3]]), {})[int(m[2])] = t
                continue
            if permuted and hf.endswith("q_proj.weight"):
                t = permute(t, cfg["num_attention_heads"])
            if permuted and hf.endswith("k_proj.weight"):
                t = permute(t, cfg["num_key_value_heads"])
            if hf.endswith("shared_expert_gate.weight"):
                t = t.reshape(-1)
            w.add_tensor(gguf_name(hf, MOE_NAMES), np.ascontiguousarray(t.astype(np.float32)))
        for (layer, name), per_expert in sorted(stacks.items()):
            stack = np.stack([per_expert[e] for e in range(experts)]).astype(np.float32)
            w.add_tensor(f"blk.{layer}.{name}.weight", np.ascontiguousarray(stack))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    return write


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

    # GGUF-only fixtures: every layer sparse (llama.cpp's MoE architectures have no dense ones).
    cfg = Qwen3MoeConfig(**common, intermediate_size=96, moe_intermediate_size=32,
                         num_hidden_layers=2, head_dim=16, num_experts=8, num_experts_per_tok=2,
                         norm_topk_prob=True, rope_parameters=rope)
    write_gguf_fixture(Qwen3MoeForCausalLM(cfg), f"{out}/qwen3moe-gguf-tiny", scale_moe,
                       moe_gguf("qwen3moe"))
    cfg = Qwen2MoeConfig(**common, intermediate_size=96, moe_intermediate_size=24,
                         shared_expert_intermediate_size=40, num_hidden_layers=2, num_experts=6,
                         num_experts_per_tok=2, norm_topk_prob=False, rope_parameters=rope)
    write_gguf_fixture(Qwen2MoeForCausalLM(cfg), f"{out}/qwen2moe-gguf-tiny", scale_moe,
                       moe_gguf("qwen2moe", shared=True))
    cfg = MixtralConfig(**common, intermediate_size=48, num_hidden_layers=2, num_local_experts=4,
                        num_experts_per_tok=2,
                        rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    write_gguf_fixture(MixtralForCausalLM(cfg), f"{out}/mixtral-gguf-tiny", scale_moe,
                       moe_gguf("llama", permuted=True, own_width=False))
    cfg = OlmoeConfig(**common, intermediate_size=32, num_hidden_layers=2, num_experts=8,
                      num_experts_per_tok=3, rope_parameters=rope)
    write_gguf_fixture(OlmoeForCausalLM(cfg), f"{out}/olmoe-gguf-tiny", scale_moe,
                       moe_gguf("olmoe", own_width=False))
    print("ok")


if __name__ == "__main__":
    main()
