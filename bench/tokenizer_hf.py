#!/usr/bin/env python3
"""Hugging Face tokenizers' single-threaded encode throughput on a file (median of runs)."""
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
import tokenizers  # noqa: E402

t0 = time.perf_counter()
tok = tokenizers.Tokenizer.from_file(sys.argv[1])
load = time.perf_counter() - t0
with open(sys.argv[2], encoding="utf-8", newline="") as f:  # keep \r\n as in the file
    text = f.read()
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
times = []
for r in range(runs + 1):
    t = time.perf_counter()
    n = len(tok.encode(text, add_special_tokens=False).ids)
    if r:
        times.append(time.perf_counter() - t)
times.sort()
m = times[len(times) // 2]
print(f"hf tokenizers {tokenizers.__version__}: {len(text.encode())} bytes -> {n} tokens, "
      f"median {m:.3f} s, {n / m:.0f} tokens/s (load {load:.2f} s)")
