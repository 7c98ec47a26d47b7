#!/usr/bin/env python3
"""transformers' perplexity by its guide's sliding windows ("Perplexity of fixed-length models"),
for anvil::perplexity. On three fixtures (llama-tiny, qwen3-tiny, mistral-window-tiny with its
4-key window), a sequence of 150 random ids (seed 7) is scored with several (max_length, stride)
pairs: windows begin every stride tokens and hold at most max_length; each window's labels are
the tokens past the previous window's end, as the guide masks them (-100 before), scored from
the window's float32 logits (eager attention) by a float64 log-softmax. Each scored token counts
once (the guide's "num_valid_tokens - batch_size" is one short for windows whose labels do not
begin at their first position; both sums are written, so the test can see the difference).
Writes tests/data/extra/perplexity.json: {"cases": [{model, ids, max_length, stride, nll_sum,
tokens, guide_nll_sum, guide_tokens, windows: [[begin, end, scored, nll_sum], ...]}, ...]}.
Usage: make_perplexity_goldens.py TESTS_DATA_DIR"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM

MODELS = ["llama-tiny", "qwen3-tiny", "extra/mistral-window-tiny"]
PAIRS = [(64, 32), (64, 64), (50, 17), (200, 100), (2, 1), (40, 40)]


def windows(model, ids, max_length, stride):
    n = len(ids)
    out = []
    guide_sum, guide_tokens = 0.0, 0
    prev_end = 0
    for begin in range(0, n, stride):
        end = min(begin + max_length, n)
        trg_len = end - prev_end
        x = torch.tensor([ids[begin:end]])
        target = x.clone()
        target[:, :-trg_len] = -100
        with torch.no_grad():
            out_model = model(x, labels=target)
        logp = torch.log_softmax(out_model.logits[0].double(), dim=-1)
        first = max(prev_end, begin + 1)
        nll = sum(-logp[t - 1 - begin, ids[t]].item() for t in range(first, end))
        out.append([begin, end, max(0, end - first), nll])
        valid = int((target != -100).sum()) - 1  # the guide's count
        guide_sum += out_model.loss.double().item() * valid
        guide_tokens += valid
        prev_end = end
        if end == n:
            break
    return out, guide_sum, guide_tokens


def main():
    data = sys.argv[1]
    gen = torch.Generator().manual_seed(7)
    cases = []
    for name in MODELS:
        model = AutoModelForCausalLM.from_pretrained(f"{data}/{name}/model", dtype=torch.float32,
                                                     attn_implementation="eager")
        ids = torch.randint(0, model.config.vocab_size, (150,), generator=gen).tolist()
        for max_length, stride in PAIRS:
            ws, guide_sum, guide_tokens = windows(model, ids, max_length, stride)
            cases.append({"model": name, "ids": ids, "max_length": max_length, "stride": stride,
                          "nll_sum": sum(w[3] for w in ws), "tokens": sum(w[2] for w in ws),
                          "guide_nll_sum": guide_sum, "guide_tokens": guide_tokens,
                          "windows": ws})
    with open(f"{data}/extra/perplexity.json", "w") as f:
        json.dump({"cases": cases}, f)


if __name__ == "__main__":
    main()
