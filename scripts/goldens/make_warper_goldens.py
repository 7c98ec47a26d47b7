#!/usr/bin/env python3
"""What transformers' typical, epsilon and eta warpers keep (after temperature and top-k where
set), on random score rows with a few near ties; then every warper with min_tokens_to_keep above
1 (beam sampling's eos ids + 1) where its cut would keep fewer. Made with transformers 5.25 (torch 2.15, CPU,
float32). Writes tests/data/extra/warpers.json: a list of {params, scores, kept}.
Usage: make_warper_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from transformers.generation.logits_process import (EpsilonLogitsWarper, EtaLogitsWarper,
                                                    LogitsProcessorList, MinPLogitsWarper,
                                                    TemperatureLogitsWarper, TopKLogitsWarper,
                                                    TopPLogitsWarper, TypicalLogitsWarper)


def main():
    g = torch.Generator().manual_seed(5)
    params = [{"typical_p": 0.9}, {"typical_p": 0.5}, {"typical_p": 0.2, "temperature": 0.7},
              {"epsilon_cutoff": 0.01}, {"epsilon_cutoff": 0.05, "top_k": 20},
              {"eta_cutoff": 0.02}, {"eta_cutoff": 0.1, "temperature": 1.5},
              {"typical_p": 0.8, "epsilon_cutoff": 0.02, "eta_cutoff": 0.01},
              # appended after the cases above, so that their rows stay the same draws
              {"top_k": 1, "min_tokens_to_keep": 3}, {"top_p": 0.05, "min_tokens_to_keep": 3},
              {"top_p": 0.6, "min_tokens_to_keep": 2}, {"min_p": 0.6, "min_tokens_to_keep": 4},
              {"typical_p": 0.05, "min_tokens_to_keep": 3},
              {"epsilon_cutoff": 0.3, "min_tokens_to_keep": 3},
              {"eta_cutoff": 0.5, "min_tokens_to_keep": 5}]
    cases = []
    for p in params:
        for spread in (1.0, 3.0):
            scores = torch.randn(1, 64, generator=g) * spread
            warpers = LogitsProcessorList()
            keep = p.get("min_tokens_to_keep", 1)
            if "temperature" in p:
                warpers.append(TemperatureLogitsWarper(p["temperature"]))
            if "top_k" in p:
                warpers.append(TopKLogitsWarper(p["top_k"], min_tokens_to_keep=keep))
            if "top_p" in p:
                warpers.append(TopPLogitsWarper(p["top_p"], min_tokens_to_keep=keep))
            if "min_p" in p:
                warpers.append(MinPLogitsWarper(p["min_p"], min_tokens_to_keep=keep))
            if "typical_p" in p:
                warpers.append(TypicalLogitsWarper(p["typical_p"], min_tokens_to_keep=keep))
            if "epsilon_cutoff" in p:
                warpers.append(EpsilonLogitsWarper(p["epsilon_cutoff"], min_tokens_to_keep=keep))
            if "eta_cutoff" in p:
                warpers.append(EtaLogitsWarper(p["eta_cutoff"], min_tokens_to_keep=keep,
                                               device="cpu"))
            out = warpers(torch.zeros(1, 1, dtype=torch.long), scores.clone())
            kept = torch.nonzero(torch.isfinite(out[0])).flatten().tolist()
            cases.append({"params": p, "scores": scores[0].tolist(), "kept": kept})
    with open(f"{sys.argv[1]}/extra/warpers.json", "w") as f:
        json.dump(cases, f)
    print("ok", [len(c["kept"]) for c in cases])


if __name__ == "__main__":
    main()
