#!/usr/bin/env python3
"""transformers' assistant_early_exit (the model's first N layers, its final norm and head draft
for it), as transformers 5.25 (torch 2.15, CPU, float32, eager attention) runs it:
- the drafting model's logits: prompt a of three fixtures (windows on some layers, NoPE
  layers, Gemma 3's sliding layers with their own RoPE) through the first N layers, as
  EarlyExitCandidateGenerator runs them (the base model's config.num_hidden_layers set to N);
- assisted generation: qwen2-window-layers-tiny generates 40 greedy tokens from prompt a with
  assistant_early_exit N; the assistant settings (num_assistant_tokens 5, a threshold, a
  schedule) come from the model's own generation_config, since the assistant is the model, and
  the heuristic schedule writes its count back there: two calls in a row. Each check step's
  draft length and kept tokens are recorded.
Writes tests/data/extra/early-exit.safetensors (`{fixture}/{N}`: float32 logits [seq, vocab])
and tests/data/extra/early-exit-steps.json ({"cases": [{layers, threshold, schedule, calls:
[{drafts, kept}, ...]}, ...]}).
Usage: make_early_exit_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM
from transformers.generation import candidate_generator

MAIN = "extra/qwen2-window-layers-tiny"
LOGIT_FIXTURES = [MAIN, "extra/smollm3-nope-tiny", "extra/gemma3-text-tiny"]
CASES = [  # layers, threshold, schedule
    (1, 0.0, "constant"),
    (2, 0.0, "constant"),
    (2, 0.4, "constant"),
    (1, 0.1, "heuristic"),
    (2, 0.0, "heuristic"),
]


def load(data, name):
    return AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                attn_implementation="eager")


def main():
    data = sys.argv[1]
    logits = {}
    for name in LOGIT_FIXTURES:
        model = load(data, name)
        prompt = load_file(f"{data}/{name}/golden.safetensors")["input_ids_a"][:1]
        base = getattr(model, model.base_model_prefix)
        full = base.config.num_hidden_layers
        for n in range(1, full):
            base.config.num_hidden_layers = n
            with torch.no_grad():
                logits[f"{name}/{n}"] = model(prompt).logits[0].float().contiguous()
            base.config.num_hidden_layers = full
    save_file(logits, f"{data}/extra/early-exit.safetensors")

    steps = []
    original = candidate_generator.AssistedCandidateGenerator.update_candidate_strategy

    def record(self, input_ids, scores, num_matches):
        steps.append((scores.shape[1] - 1, int(num_matches)))
        return original(self, input_ids, scores, num_matches)

    candidate_generator.AssistedCandidateGenerator.update_candidate_strategy = record
    prompt = load_file(f"{data}/{MAIN}/golden.safetensors")["input_ids_a"][:1]
    out = {"cases": []}
    for layers, threshold, schedule in CASES:
        model = load(data, MAIN)
        model.generation_config.num_assistant_tokens = 5
        model.generation_config.num_assistant_tokens_schedule = schedule
        model.generation_config.assistant_confidence_threshold = threshold
        calls = []
        for _ in range(2):
            steps.clear()
            model.generate(prompt, assistant_early_exit=layers, max_new_tokens=40,
                           min_new_tokens=40, do_sample=False)
            calls.append({"drafts": [d for d, _ in steps], "kept": [k for _, k in steps]})
        out["cases"].append({"layers": layers, "threshold": threshold, "schedule": schedule,
                             "calls": calls})
        print(layers, threshold, schedule, [(sum(c["drafts"]), sum(c["kept"])) for c in calls])
    with open(f"{data}/extra/early-exit-steps.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
