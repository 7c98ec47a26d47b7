#!/usr/bin/env python3
"""Parity fixture for OLMo 2 (Olmo2ForCausalLM): no input norms, the attention's and the MLP's
outputs RMS-normalised before their residual adds, q and k normalised as whole projections
before RoPE. olmo2-tiny: GQA, attention biases, an untied head, the config in the Hub's style;
olmo2-gguf-tiny: a model without biases (llama.cpp's olmo2 reads none) written as llama.cpp's
converter writes OLMo 2 (no permutation: it rotates half-split), with its transformers goldens
and the GGUF only.
Made with transformers 5.25 (torch 2.15, CPU, float32, eager attention); the golden layout of
make_window_goldens.py (gen_a, gen_long_a).
Usage: make_olmo2_goldens.py OUT_DIR
"""
import json
import os
import sys
import tempfile

import numpy as np
import torch
from gguf import GGUFWriter
from transformers import Olmo2Config, Olmo2ForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from make_extra_goldens import goldens, scale_weights  # noqa: E402
from make_rope_goldens import with_gen_a, write_fixture  # noqa: E402
from make_tiny_ggufs import NAMES, add_placeholder_vocab, gguf_name, load_tensors  # noqa: E402

OLMO2 = dict(NAMES, **{"post_attention_layernorm.weight": "post_attention_norm.weight",
                       "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})


def write_gguf(model_dir, out):
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = GGUFWriter(out, "olmo2")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    add_placeholder_vocab(w, cfg)
    for hf, t in load_tensors(model_dir).items():
        w.add_tensor(gguf_name(hf, OLMO2), np.ascontiguousarray(t.astype(np.float32)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out, os.path.getsize(out))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    cfg = Olmo2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, attention_bias=True,
                      rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=512,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    write_fixture(Olmo2ForCausalLM(cfg), out, "olmo2-tiny", hub=True, long=True)

    cfg = Olmo2Config(vocab_size=270, hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, rms_norm_eps=1e-6,
                      tie_word_embeddings=False, max_position_embeddings=512, bos_token_id=1,
                      eos_token_id=2, pad_token_id=0,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    model = Olmo2ForCausalLM(cfg)
    scale_weights(model)
    folder = f"{out}/olmo2-gguf-tiny"
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(f"{tmp}/model")
        goldens(f"{tmp}/model", f"{folder}/golden.safetensors")
        with_gen_a(f"{tmp}/model", f"{folder}/golden.safetensors", long=True)
        write_gguf(f"{tmp}/model", f"{folder}/model.gguf")
    print("ok")


if __name__ == "__main__":
    main()
