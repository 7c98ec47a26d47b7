#!/usr/bin/env python3
"""transformers' own speed on a model folder, measured the way `anvil bench` measures anvil.

Prefill: one forward pass over random prompts [batch, prompt_len] that keeps only the last
position's logits (as anvil does), timed with the device synchronised. Decode: generate() with
greedy decoding forced to run exactly gen_len new tokens, minus the prefill time, so the figure is
tokens per second of decode steps alone. Prints one JSON object per measurement.

Usage: transformers_speed.py MODEL_DIR [--device cuda] [--dtype bf16] [--batch B]
       [--prompt-len P] [--gen-len G] [--mode prefill|decode] [--repeats R]
"""
import argparse
import json
import statistics
import time

import torch
from transformers import AutoModelForCausalLM


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--gen-len", type=int, default=128)
    p.add_argument("--mode", choices=["prefill", "decode"], default="decode")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    model = AutoModelForCausalLM.from_pretrained(
        a.model, dtype=dtype, attn_implementation="sdpa").to(a.device).eval()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (a.batch, a.prompt_len), generator=gen)
    ids = ids.to(a.device)
    mask = torch.ones_like(ids)

    def prefill():
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, logits_to_keep=1)

    def timed(fn):
        sync(a.device)
        t = time.perf_counter()
        fn()
        sync(a.device)
        return time.perf_counter() - t

    timed(prefill)  # warm-up: kernels, allocator, cuBLAS plans
    t_prefill = statistics.median(timed(prefill) for _ in range(a.repeats))
    out = {"system": "transformers", "model": a.model, "device": a.device, "dtype": a.dtype,
           "batch": a.batch, "prompt_len": a.prompt_len,
           "prefill_tok_s": a.batch * a.prompt_len / t_prefill}
    if a.mode == "decode":
        def generate():
            with torch.no_grad():
                model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                               max_new_tokens=a.gen_len, min_new_tokens=a.gen_len,
                               pad_token_id=0)
        timed(generate)
        t_gen = statistics.median(timed(generate) for _ in range(a.repeats))
        out["gen_len"] = a.gen_len
        out["decode_tok_s"] = a.batch * a.gen_len / max(t_gen - t_prefill, 1e-9)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
