#!/usr/bin/env python3
"""Makes extra parity fixtures with transformers itself (run on the GPU machine, where torch and
transformers 5.17 are installed; the CPU is used so float32 is exact IEEE float32, no TF32).

Covers what ../shared/fixtures does not: llama3 RoPE scaling, attention and MLP biases,
multi-query attention, a Hub-style (pre-v5) config.json, sharded checkpoints, a bf16-stored
checkpoint, and model folders written by `anvil init-model` (do they load in transformers?).

Usage: make_extra_goldens.py OUT_DIR [ANVIL_MODEL_DIR ...]
"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)

from weight_scaling import scale_weights  # noqa: E402,F401  (re-exported to the other scripts)

torch.manual_seed(0)


def inputs(vocab):
    g = torch.Generator().manual_seed(1)
    ids_a = torch.randint(3, vocab, (1, 11), generator=g)
    ids_b = torch.randint(3, vocab, (3, 13), generator=g)
    mask_b = torch.ones_like(ids_b)
    for row, pad in enumerate([0, 4, 9]):
        ids_b[row, :pad] = 0
        mask_b[row, :pad] = 0
    ids_long = torch.randint(3, vocab, (1, 200), generator=g)
    return ids_a, ids_b, mask_b, ids_long


def goldens(model_dir, out_file, dtype=torch.float32):
    model, info = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    assert not bad, f"{model_dir}: loading info {bad}"
    model.eval()
    ids_a, ids_b, mask_b, ids_long = inputs(model.config.vocab_size)
    with torch.no_grad():
        la = model(ids_a).logits.float()
        lb = model(ids_b, attention_mask=mask_b).logits.float()
        lb = lb * mask_b[..., None]
        ll = model(ids_long).logits[:, -5:].float()
        gen_b = model.generate(ids_b, attention_mask=mask_b, max_new_tokens=12, do_sample=False)
    save_file({"input_ids_a": ids_a, "logits_a": la.contiguous(), "input_ids_b": ids_b,
               "attention_mask_b": mask_b, "logits_b": lb.contiguous(),
               "input_ids_long": ids_long, "logits_long_last": ll.contiguous(),
               "gen_b": gen_b.contiguous()}, out_file)


def hub_style(config_path):
    """Rewrites a transformers-5 config.json the way older versions wrote it."""
    with open(config_path) as f:
        c = json.load(f)
    rope = c.pop("rope_parameters")
    c["rope_theta"] = rope.pop("rope_theta")
    c["rope_scaling"] = rope if rope.get("rope_type") != "default" else None
    c["torch_dtype"] = c.pop("dtype", "float32")
    with open(config_path, "w") as f:
        json.dump(c, f, indent=2)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    # Llama with llama3 RoPE scaling, q/k/v/o and MLP biases, one KV head, untied head,
    # sharded, config in the Hub's older style.
    name = "llama3-bias-tiny"
    cfg = LlamaConfig(vocab_size=512, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=3, num_key_value_heads=1, head_dim=16,
                      rms_norm_eps=1e-5, attention_bias=True, mlp_bias=True,
                      tie_word_embeddings=False, max_position_embeddings=512,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0,
                                       "factor": 4.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 32})
    model = LlamaForCausalLM(cfg)
    scale_weights(model)
    model.save_pretrained(f"{out}/{name}/model", max_shard_size="100KB")
    hub_style(f"{out}/{name}/model/config.json")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")

    # Qwen3 with attention biases, head_dim unrelated to hidden/heads, three layers, stored
    # in bf16; goldens are float32 computed from the bf16 weights.
    name = "qwen3-bias-bf16-tiny"
    cfg = Qwen3Config(vocab_size=700, hidden_size=96, intermediate_size=64, num_hidden_layers=3,
                      num_attention_heads=6, num_key_value_heads=3, head_dim=24,
                      attention_bias=True, tie_word_embeddings=False,
                      max_position_embeddings=512, bos_token_id=1, eos_token_id=[2, 5],
                      pad_token_id=0, rope_parameters={"rope_type": "default",
                                                       "rope_theta": 10000.0})
    model = Qwen3ForCausalLM(cfg)
    scale_weights(model)
    model.to(torch.bfloat16).save_pretrained(f"{out}/{name}/model")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")

    # Model folders written by `anvil init-model`: transformers must load them with no missing
    # or unexpected weights.
    for src in sys.argv[2:]:
        name = os.path.basename(src.rstrip("/"))
        shutil.copytree(src, f"{out}/{name}/model")
        goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
        shutil.rmtree(f"{out}/{name}/model")  # anvil can rebuild it: same seed, same bytes
    print("ok")


if __name__ == "__main__":
    main()
