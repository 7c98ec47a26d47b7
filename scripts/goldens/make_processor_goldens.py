#!/usr/bin/env python3
"""Greedy generations with the logits processors anvil implements beyond the sampling ones:
no_repeat_ngram_size, min_length / min_new_tokens, bad_words_ids, forced_eos_token_id,
suppress_tokens and begin_suppress_tokens from generation_config.json, on the shared
qwen2-tiny fixture's left-padded batch. eos is set to a token greedy decoding reaches early, so
the minimum lengths change the output. Made with transformers 5.25 (torch 2.15, CPU, float32).
Writes tests/data/extra/processors.json: a list of {"generation_config": {...}, "output": rows}.
Usage: make_processor_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, GenerationConfig


def run_cases(model, ids, mask, cases, max_new_tokens):
    """Each case's fields over greedy defaults without eos: its config and output rows."""
    out = []
    for c in cases:
        cfg = {"do_sample": False, "max_new_tokens": max_new_tokens, "pad_token_id": 0,
               "eos_token_id": None}
        cfg.update(c)
        with torch.no_grad():
            rows = model.generate(ids, attention_mask=mask,
                                  generation_config=GenerationConfig(**cfg))
        out.append({"generation_config": cfg, "output": rows.tolist()})
    return out


def main():
    data = sys.argv[1]
    model = AutoModelForCausalLM.from_pretrained(f"{data}/qwen2-tiny/model", dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    g = load_file(f"{data}/qwen2-tiny/golden.safetensors")
    ids, mask = g["input_ids_b"], g["attention_mask_b"]
    prompt = ids.shape[1]
    with torch.no_grad():
        plain = model.generate(ids, attention_mask=mask, max_new_tokens=20, do_sample=False,
                               eos_token_id=None, pad_token_id=0)
    eos = int(plain[0, prompt + 2])  # the third new token of the first row
    first, second = int(plain[0, prompt]), int(plain[0, prompt + 1])
    cases = [
        {"no_repeat_ngram_size": 2},
        {"no_repeat_ngram_size": 3, "max_new_tokens": 24},
        {"no_repeat_ngram_size": 1, "max_new_tokens": 12},
        {"eos_token_id": eos},
        {"eos_token_id": eos, "min_length": prompt + 9},
        {"eos_token_id": eos, "min_new_tokens": 6},
        {"eos_token_id": eos, "min_new_tokens": 4, "min_length": prompt + 7,
         "no_repeat_ngram_size": 2},
        # min_new_tokens replaces min_length, even when shorter
        {"eos_token_id": eos, "min_new_tokens": 1, "min_length": prompt + 9},
        {"suppress_tokens": [first, second]},
        {"begin_suppress_tokens": [first, int(plain[1, prompt])]},
        {"forced_eos_token_id": 7, "max_new_tokens": 10},
        {"forced_eos_token_id": [7, 9], "eos_token_id": eos, "max_new_tokens": 10},
        # a token, a pair from the plain output, and a one-token sequence that is eos (kept)
        {"bad_words_ids": [[second], [int(plain[0, prompt + 3]), int(plain[0, prompt + 4])],
                           [eos]], "eos_token_id": eos},
    ]
    out = run_cases(model, ids, mask, cases, 20)
    # The repetition penalty skips a row's left padding (transformers' prompt_ignore_length): the
    # padding made of the token greedy decoding picks first, so that penalising it would show.
    padded = ids.clone()
    padded[mask == 0] = first
    penalty_cases = run_cases(model, padded, mask,
                              [{"repetition_penalty": 1.5},
                               {"repetition_penalty": 1.5, "num_beams": 3},
                               {"repetition_penalty": 1.5, "do_sample": True, "top_k": 1}], 8)
    # sequence_bias (one-token and longer sequences, matched against each row's end), the
    # exponential length decay of eos, renormalize_logits under beam search, max_time (0: one
    # token); forced_bos_token_id where the prompt is one token (and begin_suppress_tokens then a
    # step later), and where it is longer (no effect).
    p0 = [int(x) for x in plain[0, prompt:prompt + 4]]
    more_cases = run_cases(model, ids, mask, [
        {"sequence_bias": [[[first], -5.0]]},
        {"sequence_bias": [[[second], 4.0], [[p0[0], p0[1]], -8.0], [[p0[1], p0[2], p0[3]], -6.0],
                           [[p0[0], p0[1]], -9.0], [[second], 1.5]]},
        {"eos_token_id": eos, "exponential_decay_length_penalty": [2, 1.6]},
        {"num_beams": 3, "repetition_penalty": 1.3, "renormalize_logits": True},
        {"num_beams": 3, "sequence_bias": [[[first], -2.0]], "renormalize_logits": True},
        {"max_time": 0.0},
        {"num_beams": 2, "max_time": 0.0},
    ], 12)
    one = torch.tensor([[int(ids[1, 0])]])
    bos_cases = run_cases(model, one, torch.ones_like(one), [
        {"forced_bos_token_id": 7},
        {"forced_bos_token_id": 7, "begin_suppress_tokens": [first, second]},
        {"begin_suppress_tokens": [first, second]},
    ], 6)
    bos_long = run_cases(model, ids, mask, [{"forced_bos_token_id": 7}], 6)
    # The length when generation_config sets neither max_new_tokens nor max_length: 20 new
    # tokens (transformers 5); with max_length, the prompt counts.
    length_cases = []
    for c in ({}, {"max_length": 14}):
        cfg = {"do_sample": False, "pad_token_id": 0, "eos_token_id": None}
        cfg.update(c)
        with torch.no_grad():
            rows = model.generate(ids, attention_mask=mask,
                                  generation_config=GenerationConfig(**cfg))
        length_cases.append({"generation_config": cfg, "output": rows.tolist()})
    # prefix_allowed_tokens_fn: ids whose residue mod 3 follows the batch id and the row's
    # length (the C++ test writes the same function); greedy, with a penalty, beams, and
    # sampling with top_k 1 repeated per prompt (its batch id stays the prompt's).
    def allowed(batch_id, sent):
        return [t for t in range(model.config.vocab_size) if (t + batch_id + len(sent)) % 3 == 0]
    prefix_cases = []
    for c in ({}, {"repetition_penalty": 1.4}, {"num_beams": 3},
              {"num_beams": 2, "num_return_sequences": 2},
              {"do_sample": True, "top_k": 1, "num_return_sequences": 2}):
        cfg = {"do_sample": False, "max_new_tokens": 8, "pad_token_id": 0, "eos_token_id": None}
        cfg.update(c)
        with torch.no_grad():
            rows = model.generate(ids, attention_mask=mask, prefix_allowed_tokens_fn=allowed,
                                  generation_config=GenerationConfig(**cfg))
        prefix_cases.append({"generation_config": cfg, "output": rows.tolist()})
    with open(f"{data}/extra/processors.json", "w") as f:
        json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "cases": out,
                   "penalty_input_ids": padded.tolist(), "penalty_cases": penalty_cases,
                   "more_cases": more_cases + bos_long, "bos_input_ids": one.tolist(),
                   "bos_cases": bos_cases, "length_cases": length_cases,
                   "prefix_cases": prefix_cases}, f, indent=1)
    print("ok")


if __name__ == "__main__":
    main()
