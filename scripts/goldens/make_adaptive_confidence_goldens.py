#!/usr/bin/env python3
"""transformers' adaptive assistant confidence threshold in assisted generation, where
scikit-learn is importable (transformers then moves assistant_confidence_threshold after every
check step to the point of the drafts' ROC curve with the least fpr + 3 fnr). First it writes
an assistant that agrees with the main fixture often but not always (tiny random models' picks
are near ties, so another fixture agrees with it almost never): qwen2-window-layers-tiny's
weights, each tensor plus Gaussian noise of 0.05 its standard deviation (seed 11), as
extra/qwen2-window-layers-noisy-tiny/model. Then qwen2-window-layers-tiny generates 40 greedy
tokens from its prompt a, helped by assistants whose generation_config holds
num_assistant_tokens 5, a starting threshold and a schedule (the noisy one; another fixture,
never kept; the model itself, always kept: neither moves the threshold); records each check
step's draft length, kept tokens and the threshold after it, as transformers 5.25 (torch 2.15,
CPU, float32, eager attention, scikit-learn 1.9.1) runs them.
Writes tests/data/extra/adaptive-confidence-steps.json: {"cases": [{assistant, threshold,
schedule, drafts, kept, thresholds}, ...]} (a threshold of +inf written as null).
Usage: make_adaptive_confidence_goldens.py TESTS_DATA_DIR"""
import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from transformers.generation import candidate_generator
from transformers.utils import is_sklearn_available

MAIN = "extra/qwen2-window-layers-tiny"
NOISY = "extra/qwen2-window-layers-noisy-tiny"
CASES = [  # assistant, starting threshold, schedule
    (NOISY, 0.4, "constant"),
    (NOISY, 0.1, "constant"),
    (NOISY, 0.02, "constant"),
    (NOISY, 0.9, "constant"),
    (NOISY, 0.4, "heuristic"),
    (NOISY, 0.2, "heuristic_transient"),
    ("extra/olmo2-tiny", 0.4, "constant"),
    (MAIN, 0.4, "constant"),
]


def load(data, name):
    return AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                attn_implementation="eager")


def write_noisy(data):
    from safetensors.torch import save_file
    src, dst = f"{data}/{MAIN}/model", f"{data}/{NOISY}/model"
    os.makedirs(dst, exist_ok=True)
    for name in ["config.json", "generation_config.json"]:
        shutil.copy(f"{src}/{name}", f"{dst}/{name}")
    weights = load_file(f"{src}/model.safetensors")
    g = torch.Generator().manual_seed(11)
    for name in sorted(weights):
        w = weights[name]
        if w.numel() > 1:
            weights[name] = w + torch.randn(w.shape, generator=g) * w.std() * 0.05
    save_file(weights, f"{dst}/model.safetensors", metadata={"format": "pt"})


def main():
    assert is_sklearn_available(), "transformers adapts the threshold only with scikit-learn"
    data = sys.argv[1]
    write_noisy(data)
    model = load(data, MAIN)
    prompt = load_file(f"{data}/{MAIN}/golden.safetensors")["input_ids_a"][:1]
    steps = []  # (drafted, kept, threshold after) of each check step

    original = candidate_generator.AssistedCandidateGenerator.update_candidate_strategy

    def record(self, input_ids, scores, num_matches):
        result = original(self, input_ids, scores, num_matches)
        t = float(self.generation_config.assistant_confidence_threshold)
        steps.append((scores.shape[1] - 1, int(num_matches), None if math.isinf(t) else t))
        return result

    candidate_generator.AssistedCandidateGenerator.update_candidate_strategy = record
    out = {"cases": []}
    for name, threshold, schedule in CASES:
        assistant = load(data, name)
        assistant.generation_config.num_assistant_tokens = 5
        assistant.generation_config.num_assistant_tokens_schedule = schedule
        assistant.generation_config.assistant_confidence_threshold = threshold
        steps.clear()
        model.generate(prompt, assistant_model=assistant, max_new_tokens=40, min_new_tokens=40,
                       do_sample=False)
        out["cases"].append({"assistant": name, "threshold": threshold, "schedule": schedule,
                             "drafts": [d for d, _, _ in steps], "kept": [k for _, k, _ in steps],
                             "thresholds": [t for _, _, t in steps]})
        print(name, threshold, schedule, out["cases"][-1]["drafts"], steps[-1][2])
    with open(f"{data}/extra/adaptive-confidence-steps.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
