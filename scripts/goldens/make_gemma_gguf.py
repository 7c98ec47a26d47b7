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
import json
import os
import sys
import tempfile

import numpy as np
import torch
from gguf import GGUFWriter, RopeScalingType
from transformers import Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, os.path.dirname(__file__))
from make_gemma_goldens import scale_gemma_weights  # noqa: E402
from make_extra_goldens import goldens  # noqa: E402
from make_rope_goldens import with_gen_a  # noqa: E402
from make_tiny_ggufs import NAMES, add_placeholder_vocab, gguf_name, load_tensors  # noqa: E402

# llama.cpp's per-layer names as make_tiny_ggufs.py maps them (post_attention_layernorm is the
# MLP's input norm, ffn_norm, in Gemma 1), and Gemma 2 / 3's four norms.
GEMMA1 = NAMES
SANDWICH = dict(NAMES, **{"post_attention_layernorm.weight": "post_attention_norm.weight",
                          "pre_feedforward_layernorm.weight": "ffn_norm.weight",
                          "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})


def write(model_dir, out, arch, extra=None):
    cfg = json.load(open(f"{model_dir}/config.json"))
    tensors = load_tensors(model_dir)
    w = GGUFWriter(out, arch)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    rope = cfg.get("rope_parameters") or {"rope_theta": cfg.get("rope_theta", 10000.0)}
    w.add_rope_freq_base(rope.get("full_attention", rope)["rope_theta"])
    if extra:
        extra(w, cfg)
    add_placeholder_vocab(w, cfg)
    names = GEMMA1 if arch == "gemma" else SANDWICH
    for hf, t in tensors.items():
        t = t.astype(np.float32)
        if hf.endswith("norm.weight"):
            t = t + np.float32(1.0)  # GemmaModel / Gemma2Model / Gemma3Model.modify_tensors
        w.add_tensor(gguf_name(hf, names), np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out, os.path.getsize(out))


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


def fixture(data, name, model, arch, extra):
    """Goldens from transformers and the GGUF; the safetensors folder is not kept."""
    folder = f"{data}/extra/{name}"
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        scale_gemma_weights(model)
        model.save_pretrained(f"{tmp}/model")
        goldens(f"{tmp}/model", f"{folder}/golden.safetensors")
        with_gen_a(f"{tmp}/model", f"{folder}/golden.safetensors", long=True)
        write(f"{tmp}/model", f"{folder}/model.gguf", arch, extra)


def main():
    data = sys.argv[1]
    torch.manual_seed(5)
    write(f"{data}/extra/gemma-tiny/model", f"{data}/extra/gemma-tiny/model.gguf", "gemma")

    cfg = Gemma2Config(vocab_size=290, hidden_size=64, intermediate_size=112, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       query_pre_attn_scalar=16, sliding_window=5, attn_logit_softcapping=2.0,
                       final_logit_softcapping=4.0, rms_norm_eps=1e-6,
                       max_position_embeddings=512, bos_token_id=2, eos_token_id=1,
                       pad_token_id=0)
    fixture(data, "gemma2-gguf-tiny", Gemma2ForCausalLM(cfg), "gemma2", gemma2_keys)

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
    fixture(data, "gemma3-gguf-tiny", Gemma3ForCausalLM(cfg), "gemma3", gemma3_keys)


if __name__ == "__main__":
    main()
