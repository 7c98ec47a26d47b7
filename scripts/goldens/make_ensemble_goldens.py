#!/usr/bin/env python3
"""transformers' assistant_ensemble_weight (static ensemble verification, DIVERSE) in greedy
assisted generation: drafts are checked against argmax(w p + (1 - w) q) instead of argmax p, so
the tokens are no longer plain greedy's. qwen2-window-layers-tiny generates 40 greedy tokens
from its prompt a with assistants whose generation_config sets num_assistant_tokens 5 and a
threshold (the noisy copy of the model, which agrees with it often; olmo2-tiny, which almost
never does; the model's own first 2 layers through assistant_early_exit, whose settings are the
model's own) and weights 0.3 and 0.7; records the sequence and each check step's draft length
and kept tokens, as transformers 5.25 (torch 2.15, CPU, float32, eager) runs them. With
scikit-learn importable (1.9.1 here), a separate assistant's threshold above 0 adapts
(assistant_adaptive_confidence in anvil); an early exit's does not.
Writes tests/data/extra/ensemble-steps.json ({"cases": [{assistant, weight, threshold,
sequence, drafts, kept}, ...]}; assistant "early_exit_2" for the early exit).
Usage: make_ensemble_goldens.py TESTS_DATA_DIR (after make_adaptive_confidence_goldens.py,
which writes the noisy assistant)"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from transformers.generation import candidate_generator

MAIN = "extra/qwen2-window-layers-tiny"
CASES = [  # assistant, weight, threshold
    ("extra/qwen2-window-layers-noisy-tiny", 0.3, 0.0),
    ("extra/qwen2-window-layers-noisy-tiny", 0.7, 0.0),
    ("extra/qwen2-window-layers-noisy-tiny", 0.5, 0.4),
    ("extra/olmo2-tiny", 0.3, 0.0),
    ("early_exit_2", 0.5, 0.0),
]


def load(data, name):
    return AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                attn_implementation="eager")


def main():
    data = sys.argv[1]
    prompt = load_file(f"{data}/{MAIN}/golden.safetensors")["input_ids_a"][:1]
    steps = []
    original = candidate_generator.AssistedCandidateGenerator.update_candidate_strategy

    def record(self, input_ids, scores, num_matches):
        steps.append((scores.shape[1] - 1, int(num_matches)))
        return original(self, input_ids, scores, num_matches)

    candidate_generator.AssistedCandidateGenerator.update_candidate_strategy = record
    out = {"cases": []}
    for name, weight, threshold in CASES:
        model = load(data, MAIN)
        steps.clear()
        if name == "early_exit_2":
            model.generation_config.num_assistant_tokens = 5
            model.generation_config.assistant_confidence_threshold = threshold
            seq = model.generate(prompt, assistant_early_exit=2, assistant_ensemble_weight=weight,
                                 max_new_tokens=40, min_new_tokens=40, do_sample=False)
        else:
            assistant = load(data, name)
            assistant.generation_config.num_assistant_tokens = 5
            assistant.generation_config.assistant_confidence_threshold = threshold
            seq = model.generate(prompt, assistant_model=assistant,
                                 assistant_ensemble_weight=weight, max_new_tokens=40,
                                 min_new_tokens=40, do_sample=False)
        out["cases"].append({"assistant": name, "weight": weight, "threshold": threshold,
                             "sequence": seq[0].tolist(), "drafts": [d for d, _ in steps],
                             "kept": [k for _, k in steps]})
        plain = load_file(f"{data}/{MAIN}/golden.safetensors")["gen_long_a"][0].tolist()
        print(name, weight, threshold, sum(d for d, _ in steps), sum(k for _, k in steps),
              "same as greedy" if seq[0].tolist() == plain else "differs from greedy")
    with open(f"{data}/extra/ensemble-steps.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
