#!/usr/bin/env python3
"""Parity fixtures for RoPE scalings beyond the shared fixtures' (llama3 is in
make_extra_goldens.py): YaRN as Qwen's model cards enable it (Hub-style rope_scaling, derived
attention factor), YaRN with every optional parameter set (beta_fast / beta_slow, mscale /
mscale_all_dim, truncate false) in transformers 5's rope_parameters, and dynamic NTK scaling.

Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); transformers 5.17's
_compute_yarn_parameters is the same computation. Same golden layout as make_extra_goldens.py, plus gen_a.
Usage: make_rope_goldens.py OUT_DIR
"""
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import goldens, hub_style, scale_weights  # noqa: E402


def with_gen_a(model_dir, golden_path, long=False):
    """Adds gen_a (16 greedy tokens after input_ids_a, prompt included), which the device
    parity tests read as they do the shared fixtures', and with `long` gen_long_a (40 tokens,
    eos ignored), from a freshly loaded model."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    g = load_file(golden_path)
    with torch.no_grad():
        g["gen_a"] = model.generate(g["input_ids_a"], max_new_tokens=16,
                                    do_sample=False).contiguous()
        if long:
            g["gen_long_a"] = model.generate(g["input_ids_a"], max_new_tokens=40,
                                             min_new_tokens=40, do_sample=False).contiguous()
    save_file(g, golden_path)


def write_fixture(model, out, name, hub=False, long=False, edit_config=None):
    """Saves `model` under OUT/NAME/model (config rewritten in the Hub's older style with
    `hub`, then by `edit_config(path)` where given) and writes its goldens, gen_a, and with
    `long` gen_long_a."""
    scale_weights(model)
    model.save_pretrained(f"{out}/{name}/model")
    if hub:
        hub_style(f"{out}/{name}/model/config.json")
    if edit_config:
        edit_config(f"{out}/{name}/model/config.json")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
    with_gen_a(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors", long=long)


def write_gguf_fixture(model, folder, scale, write):
    """A GGUF-only fixture: `model`'s weights drawn by scale(model), its transformers goldens
    (with gen_a and gen_long_a) in folder/golden.safetensors, and write(model_dir, out) writing
    folder/model.gguf; the safetensors folder is not kept."""
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        scale(model)
        model.save_pretrained(f"{tmp}/model")
        goldens(f"{tmp}/model", f"{folder}/golden.safetensors")
        with_gen_a(f"{tmp}/model", f"{folder}/golden.safetensors", long=True)
        write(f"{tmp}/model", f"{folder}/model.gguf")


def main():
    out = sys.argv[1]
    torch.manual_seed(0)

    # Qwen2 with YaRN as the Qwen2.5 / Qwen3 cards add it: factor 4 over an original context
    # shorter than the long input, config in the Hub's older style.
    name = "qwen2-yarn-tiny"
    cfg = Qwen2Config(vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, max_position_embeddings=256,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                       "original_max_position_embeddings": 64})
    model = Qwen2ForCausalLM(cfg)
    scale_weights(model)
    model.save_pretrained(f"{out}/{name}/model")
    hub_style(f"{out}/{name}/model/config.json")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
    with_gen_a(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")

    # Llama with YaRN and every optional parameter: a ramp not truncated to whole dimensions,
    # betas of its own, the attention factor from mscale / mscale_all_dim.
    name = "llama-yarn-params-tiny"
    cfg = LlamaConfig(vocab_size=300, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, head_dim=24,
                      rms_norm_eps=1e-5, tie_word_embeddings=False,
                      max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                      pad_token_id=0,
                      rope_parameters={"rope_type": "yarn", "rope_theta": 2000.0, "factor": 8.0,
                                       "original_max_position_embeddings": 48,
                                       "beta_fast": 24.0, "beta_slow": 2.0, "mscale": 0.9,
                                       "mscale_all_dim": 0.6, "truncate": False})
    model = LlamaForCausalLM(cfg)
    scale_weights(model)
    model.save_pretrained(f"{out}/{name}/model")
    goldens(f"{out}/{name}/model", f"{out}/{name}/golden.safetensors")
    # Llama with dynamic NTK scaling and a short max_position_embeddings: the long input grows
    # the base, the padded batch's generation after it resets it (dynamic_rope_update keeps
    # this state on the model between calls, so the goldens are computed in the order the
    # tests run them), and gen_long_a grows it at every decode step past position 32.
    name = "llama-dynamic-tiny"
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, max_position_embeddings=32,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0,
                                       "factor": 3.0})
    write_fixture(LlamaForCausalLM(cfg), out, name, hub=True, long=True)
    print("ok")


if __name__ == "__main__":
    main()
