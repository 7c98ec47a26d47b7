#!/usr/bin/env python3
"""transformers' speculative steps, for run_speculative and AssistantDrafter. First its
assistant settings and num_assistant_tokens_schedule: the qwen2-window-layers-tiny fixture
generates 40 greedy tokens from its prompt a, helped by
assistants whose generation_config holds num_assistant_tokens 3, assistant_confidence_threshold
0 and each schedule, two calls in a row with the same assistant object (the heuristic schedule
carries its count over to the next call). Records each call's draft lengths (the candidates of
each check step) and the matches kept, as transformers 5.25 (torch 2.15, CPU, float32, eager
attention) runs them. It reads these settings from the assistant's generation_config, not from
generate()'s arguments or the main model's.
Then prompt lookup (prompt_lookup_num_tokens 5, max_matching_ngram_size 1-3) on three fixtures,
40 greedy tokens from their prompt a. The first step drafts after the prompt in both.
Last, prompt lookup (5 tokens, n-grams of 2) with no_repeat_ngram_size 3 on the same fixtures,
whose ban cuts drafts.
Writes tests/data/extra/speculative-steps.json: {"assistant": [{assistant, schedule, calls:
[{drafts, kept}, ...]}, ...], "lookup": [{model, ngram, drafts, kept}, ...], "lookup_banned":
[{model, sequence, drafts, kept}, ...]}.
Usage: make_assistant_schedule_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from transformers.generation import candidate_generator

MAIN = "extra/qwen2-window-layers-tiny"
ASSISTANTS = [MAIN, "extra/olmo2-tiny", "extra/llama-yarn-params-tiny"]
LOOKUP_MODELS = ["extra/mistral-window-tiny", MAIN, "extra/gemma3-text-tiny"]


def load(data, name):
    return AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                attn_implementation="eager")


def main():
    data = sys.argv[1]
    model = load(data, MAIN)
    prompt = load_file(f"{data}/{MAIN}/golden.safetensors")["input_ids_a"][:1]
    steps = []  # (drafted, kept) of each check step of the running call
    def recording(cls):
        original = cls.update_candidate_strategy

        def record(self, input_ids, scores, num_matches):
            steps.append((scores.shape[1] - 1, int(num_matches)))
            return original(self, input_ids, scores, num_matches)

        cls.update_candidate_strategy = record

    recording(candidate_generator.AssistedCandidateGenerator)
    recording(candidate_generator.PromptLookupCandidateGenerator)
    out = {"assistant": [], "lookup": [], "lookup_banned": []}
    for name in ASSISTANTS:
        for schedule in ["constant", "heuristic", "heuristic_transient"]:
            assistant = load(data, name)
            assistant.generation_config.num_assistant_tokens = 3
            assistant.generation_config.num_assistant_tokens_schedule = schedule
            assistant.generation_config.assistant_confidence_threshold = 0.0
            calls = []
            for _ in range(2):
                steps.clear()
                model.generate(prompt, assistant_model=assistant, max_new_tokens=40,
                               min_new_tokens=40, do_sample=False)
                calls.append({"drafts": [d for d, _ in steps], "kept": [k for _, k in steps]})
            out["assistant"].append({"assistant": name, "schedule": schedule, "calls": calls})
            print(name, schedule, [c["drafts"] for c in calls])
    for name in LOOKUP_MODELS:
        lookup_model = load(data, name)
        lookup_prompt = load_file(f"{data}/{name}/golden.safetensors")["input_ids_a"][:1]
        for ngram in [1, 2, 3]:
            steps.clear()
            lookup_model.generate(lookup_prompt, prompt_lookup_num_tokens=5,
                                  max_matching_ngram_size=ngram, max_new_tokens=40,
                                  min_new_tokens=40, do_sample=False)
            out["lookup"].append({"model": name, "ngram": ngram,
                                  "drafts": [d for d, _ in steps], "kept": [k for _, k in steps]})
            print(name, ngram, out["lookup"][-1]["drafts"])
        # An n-gram ban forbids drafts that repeat a trigram: transformers cuts them where its
        # processors give -inf over logits of ones, and tries the next match where nothing is
        # left.
        steps.clear()
        seq = lookup_model.generate(lookup_prompt, prompt_lookup_num_tokens=5,
                                    max_matching_ngram_size=2, no_repeat_ngram_size=3,
                                    max_new_tokens=40, min_new_tokens=40, do_sample=False)
        out["lookup_banned"].append({"model": name, "sequence": seq[0].tolist(),
                                     "drafts": [d for d, _ in steps],
                                     "kept": [k for _, k in steps]})
        print(name, "banned", out["lookup_banned"][-1]["drafts"])
    with open(f"{data}/extra/speculative-steps.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
