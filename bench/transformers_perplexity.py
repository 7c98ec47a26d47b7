#!/usr/bin/env python3
"""transformers' perplexity of a token sequence, by its guide's sliding-window loop ("Perplexity of
fixed-length models"), timed from the first window to the last with the device synchronised.
Prints one JSON object: the perplexity, the seconds, the windows.

Usage: transformers_perplexity.py MODEL_DIR IDS_FILE [--device cuda] [--dtype bf16]
       [--max-length 1024] [--stride 512]
IDS_FILE holds comma-separated token ids (what `anvil perplexity --input-ids` takes).
"""
import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("ids")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--stride", type=int, default=512)
    a = p.parse_args()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    model = AutoModelForCausalLM.from_pretrained(
        a.model, dtype=dtype, attn_implementation="sdpa").to(a.device).eval()
    ids = [int(t) for t in open(a.ids).read().split(",")]
    input_ids = torch.tensor([ids], device=a.device)
    seq_len = input_ids.size(1)

    def sync():
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()

    sync()
    start = time.perf_counter()
    nlls, windows, prev_end = [], 0, 0
    for begin in range(0, seq_len, a.stride):  # the guide's loop, as it is written there
        end = min(begin + a.max_length, seq_len)
        trg_len = end - prev_end
        window = input_ids[:, begin:end]
        target_ids = window.clone()
        target_ids[:, :-trg_len] = -100
        with torch.no_grad():
            loss = model(window, labels=target_ids).loss
        nlls.append(loss * trg_len)  # the guide's weighting (off by one per overlapping window)
        windows += 1
        prev_end = end
        if end == seq_len:
            break
    ppl = torch.exp(torch.stack(nlls).sum() / prev_end).item()
    sync()
    print(json.dumps({"perplexity": ppl, "seconds": time.perf_counter() - start,
                      "windows": windows, "tokens": seq_len}))


if __name__ == "__main__":
    main()
