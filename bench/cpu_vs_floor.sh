#!/usr/bin/env bash
# The CPU issue's table in one run: Qwen2.5-0.5B-shaped Q8_0, Q4_0, bf16 and Q4_K_M models (random
# weights from `anvil init-model`) and the default model (SmolLM2-135M Q4_1): prefill of 128 and
# of 2048 tokens, decode after a 128-token prompt, the decode floor (weight bytes per step over
# the read bandwidth `anvil bench` measures right before and after each timed decode, so each
# run is set against the bandwidth of its own seconds) and decode as a share of it,
# beside llama.cpp's figures quoted in the issue (measured on this machine; llama.cpp is not
# built here). Each figure is the median of REPEATS runs (the machine may be shared).
# Usage: bench/cpu_vs_floor.sh [REPEATS] [THREADS]      (models go to $ANVIL_BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats="${1:-3}"
threads="${2:-2}"
dir="${ANVIL_BENCH_DIR:-/tmp/anvil-bench}"
scripts/build build >/dev/null
anvil=./build/anvil
mkdir -p "$dir"
# q4_k_m: llama.cpp's mix (K types, Q5_0/Q8_0 where rows are not whole super-blocks), the file
# type most llama.cpp users run; the issue quotes no llama.cpp figure for it.
for dt in q8_0 q4_0 bf16 q4_k_m; do
  if [ ! -e "$dir/q05-$dt/config.json" ]; then
    "$anvil" init-model --like qwen2.5-0.5b --dtype "$dt" --out "$dir/q05-$dt" >/dev/null
  fi
done
default=$("$anvil" default-model)

run() {  # MODEL PROMPT GEN -> one JSON line per repeat
  for _ in $(seq "$repeats"); do
    "$anvil" bench "$1" --threads "$threads" --prompt-len "$2" --gen-len "$3" --repeats 1 --json
  done
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for spec in "Q8_0|$dir/q05-q8_0/model.gguf|489|45.5" "Q4_0|$dir/q05-q4_0/model.gguf|481|65.6" \
            "BF16|$dir/q05-bf16|138|17.3" "Q4_K_M|$dir/q05-q4_k_m/model.gguf||" \
            "SmolLM2-135M Q4_1 (default)|$default||"; do
  IFS='|' read -r name model ref_prefill ref_decode <<<"$spec"
  short=$(run "$model" 128 64 | jq -s '.')
  long=$(run "$model" 2048 1 | jq -s '.')
  jq -n --arg name "$name" --arg rp "$ref_prefill" --arg rd "$ref_decode" \
    --argjson s "$short" --argjson l "$long" '
    def median: sort | .[(length / 2 | floor)];
    {name: $name,
     prefill128: ([$s[].prefill_tok_s] | median),
     prefill2048: ([$l[].prefill_tok_s] | median),
     decode: ([$s[].decode_tok_s] | median),
     floor: ([$s[].decode_floor_tok_s] | median),
     fraction: ([$s[].decode_fraction_of_floor] | median),
     membw: ([$s[].membw_gb_s] | median),
     membw_min: ([$s[].membw_min_gb_s] | min),
     membw_max: ([$s[].membw_max_gb_s] | max),
     mb: ($s[0].weight_bytes_per_step / 1e6),
     ref_prefill: $rp, ref_decode: $rd}' >>"$results"
done

echo "anvil, $threads threads, median of $repeats runs; floor = weight bytes per step / read bandwidth"
echo "measured right before and after each timed decode (decode as a share of it computed per run,"
echo "then the median; the bandwidth column gives the median and, in brackets, every sample's range)."
echo
echo "| weights | prefill 128 tok/s | prefill 2048 tok/s | decode tok/s | floor tok/s (MB/step @ GB/s) | decode / floor | llama.cpp prefill 128 / decode | prefill vs llama.cpp |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
jq -r -s '.[] | "| \(.name) | \(.prefill128 | floor) | \(.prefill2048 | floor) | \(.decode * 10 | floor / 10) | \(.floor * 10 | floor / 10) (\(.mb | floor) MB @ \(.membw * 10 | floor / 10) [\(.membw_min * 10 | floor / 10)-\(.membw_max * 10 | floor / 10)]) | \(.fraction * 100 | floor)% | " +
  (if .ref_prefill == "" then "- | -" else "\(.ref_prefill) / \(.ref_decode) | \(.prefill128 / (.ref_prefill | tonumber) * 100 | floor / 100)x" end) + " |"' "$results"
