#!/usr/bin/env python3
"""Beam search (num_beams > 1) and num_return_sequences against transformers' own generate:
length_penalty, early_stopping (True / False / "never"), several eos ids, the processors
applied to log-probabilities, on the shared qwen2-tiny fixture's left-padded batch and
llama-tiny's single prompt; and on the Mistral (sliding window) and Phi-3 (longrope, whose
generate recomputes the cache once the beams pass the original context) fixtures' padded
batches, long enough to cross both. eos is set to tokens the beams reach early, so hypotheses finish at
different lengths and the early-stopping rules decide. Made with transformers 5.25 (torch 2.15,
CPU, float32). Writes tests/data/extra/beams.json: per model, its batch and a list of
{"generation_config": {...}, "output": rows, "scores": sequences_scores}.
Usage: make_beam_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, GenerationConfig


def frequent_tokens(model, ids, mask, prompt):
    """Tokens the beams pick early: the second and fourth new token of a plain 4-beam run."""
    with torch.no_grad():
        plain = model.generate(ids, attention_mask=mask, max_new_tokens=8, num_beams=4,
                               do_sample=False, eos_token_id=None, pad_token_id=0)
    return int(plain[0, prompt + 1]), int(plain[0, prompt + 3])


def cases_for(eos, eos2):
    return [
        {"num_beams": 2},
        {"num_beams": 3, "eos_token_id": eos},
        {"num_beams": 4, "eos_token_id": eos},
        {"num_beams": 4, "eos_token_id": eos, "early_stopping": True},
        {"num_beams": 4, "eos_token_id": eos, "early_stopping": "never"},
        {"num_beams": 4, "eos_token_id": eos, "early_stopping": "never", "length_penalty": 2.0},
        {"num_beams": 4, "eos_token_id": eos, "length_penalty": 0.0},
        {"num_beams": 4, "eos_token_id": eos, "length_penalty": -1.0},
        {"num_beams": 5, "eos_token_id": [eos, eos2], "max_new_tokens": 14},
        {"num_beams": 4, "eos_token_id": eos, "num_return_sequences": 3},
        {"num_beams": 3, "eos_token_id": eos, "num_return_sequences": 3, "pad_token_id": 5,
         "early_stopping": True},
        {"num_beams": 4, "eos_token_id": eos, "repetition_penalty": 1.5},
        {"num_beams": 3, "eos_token_id": eos, "no_repeat_ngram_size": 2},
        {"num_beams": 4, "eos_token_id": eos, "min_new_tokens": 6},
        {"num_beams": 2, "eos_token_id": eos, "bad_words_ids": [[eos2]],
         "suppress_tokens": [3, 4], "forced_eos_token_id": eos, "max_new_tokens": 9},
        {"num_beams": 6, "eos_token_id": eos, "max_new_tokens": 1},
    ]


def window_cases(eos, eos2):
    return [{"num_beams": 3, "max_new_tokens": 26},
            {"num_beams": 4, "eos_token_id": eos, "num_return_sequences": 2,
             "max_new_tokens": 24}]


def run(model, ids, mask, cases):
    out = []
    for c in cases:
        cfg = {"do_sample": False, "max_new_tokens": 12, "pad_token_id": 0, "eos_token_id": None}
        cfg.update(c)
        with torch.no_grad():
            res = model.generate(ids, attention_mask=mask, generation_config=GenerationConfig(**cfg),
                                 return_dict_in_generate=True, output_scores=True)
        out.append({"generation_config": cfg, "output": res.sequences.tolist(),
                    "scores": res.sequences_scores.tolist()})
    return out


def main():
    data = sys.argv[1]
    result = {}
    for name, ids_key, mask_key, cases in (
            ("qwen2-tiny", "input_ids_b", "attention_mask_b", cases_for),
            ("llama-tiny", "input_ids_a", None, cases_for),
            ("extra/mistral-window-tiny", "input_ids_b", "attention_mask_b", window_cases),
            ("extra/phi3-longrope-window-tiny", "input_ids_b", "attention_mask_b",
             window_cases)):
        model = AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                     attn_implementation="eager").eval()
        # generate() fills a generation_config's unset (default-valued) fields from the model's
        # own, whose eos is 2: a case without eos must have none.
        model.generation_config.eos_token_id = None
        g = load_file(f"{data}/{name}/golden.safetensors")
        ids = g[ids_key]
        mask = g[mask_key] if mask_key else torch.ones_like(ids)
        eos, eos2 = frequent_tokens(model, ids, mask, ids.shape[1])
        result[name] = {"input_ids": ids.tolist(), "attention_mask": mask.tolist(),
                        "cases": run(model, ids, mask, cases(eos, eos2))}
    with open(f"{data}/extra/beams.json", "w") as f:
        json.dump(result, f, indent=1)
    print("ok")


if __name__ == "__main__":
    main()
