#!/usr/bin/env bash
# Two (or more) anvil binaries' batch-1 CPU decode, alternated round by round, each run with the
# team kernel's per-phase profile (ANVIL_CPU_DECODE_PROFILE=1). On a machine whose bandwidth
# swings within minutes, tok/s and the products' times move with it; a layer's time outside the
# four products (RoPE, attention, merges, and separately the phases' waits) moves far less, so
# a change to that work shows there first. Prints per round and binary: decode tok/s, the share
# of the floor, then that time (members averaged), and keeps the raw profiles.
# Usage: bench/cpu_decode_ab.sh MODEL ROUNDS BIN... (e.g. an old binary copied aside, then
#        build/anvil); THREADS (2), PROMPT (128), GEN (64) from the environment; RAW=file keeps
#        every profile there.
set -euo pipefail
model="$1" rounds="$2"
shift 2
raw="${RAW:-$(mktemp)}"
: >"$raw"
for r in $(seq "$rounds"); do
  for b in "$@"; do
    echo "== round $r $b" >>"$raw"
    ANVIL_CPU_DECODE_PROFILE=1 "$b" bench "$model" --threads "${THREADS:-2}" \
      --prompt-len "${PROMPT:-128}" --gen-len "${GEN:-64}" --repeats 1 2>&1 |
      grep -E "profile|^  |^decode|^floor" >>"$raw"
  done
done
python3 - "$raw" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for block in re.split(r"^== round ", text, flags=re.M)[1:]:
    head = block.split("\n")[0]
    rows = []
    for line in block.split("\n"):
        m = re.match(r"\s{2,}(\S.*?)\s{2,}([\d.]+)((?:\s+[\d.]+)*)$", line)
        if m:
            vals = [float(m.group(2))] + [float(v) for v in m.group(3).split()]
            rows.append((m.group(1).strip(), sum(vals) / len(vals)))
    products = {"q/k/v", "o", "gate/up", "down"}
    other = sum(v for k, v in rows if k not in products and k != "wait")
    waits = sum(v for k, v in rows if k == "wait")
    dec = re.search(r"^decode\s+([\d.]+)", block, re.M)
    share = re.search(r"decode is (\d+)% of it", block)
    print(f"round {head:40s} decode {dec.group(1) if dec else '-':>7} tok/s "
          f"({share.group(1) if share else '-'}% of the floor)  outside the products "
          f"{other:6.1f} us a layer, waits {waits:5.1f}")
PY
