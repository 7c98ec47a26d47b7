#!/usr/bin/env bash
# The CPU issue's table in one run: Qwen2.5-0.5B-shaped Q8_0, Q4_0, bf16 and Q4_K_M models and a
# Qwen3-0.6B-shaped Q4_K_M model (random weights from `anvil init-model`, GGUF files that
# llama.cpp loads too) and the default model (SmolLM2-135M Q4_1): prefill of 128 and of 2048
# tokens, decode after a 128-token prompt, the decode floor (weight bytes per step over the read
# bandwidth `anvil bench` measures right before and after each timed decode, so each run is set
# against the bandwidth of its own seconds) and decode as a share of it; beside each, llama.cpp's
# llama-bench on the same file with the same threads, run right after anvil (built natively
# here by bench/llama_cpp_peer.sh from PyPI's llama-cpp-python source; PEER=0 leaves it out,
# LLAMA_CPP_AMX=0 builds it without its AMX path, which crashed on two Xeon guests).
# Each figure is the median of REPEATS runs (the machine may be shared).
# Usage: bench/cpu_vs_floor.sh [REPEATS] [THREADS]      (models go to $ANVIL_BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats="${1:-3}"
threads="${2:-2}"
dir="${ANVIL_BENCH_DIR:-/tmp/anvil-bench}"
scripts/build build >/dev/null
anvil=./build/anvil
peer=""
[ "${PEER:-1}" = 0 ] || peer=$(bench/llama_cpp_peer.sh)
mkdir -p "$dir"
# q4_k_m: llama.cpp's mix (K types, Q5_0/Q8_0 where rows are not whole super-blocks), the file
# type most llama.cpp users run. bf16 as a GGUF file, so both programs read the same bytes.
for spec in qwen2.5-0.5b:q8_0 qwen2.5-0.5b:q4_0 qwen2.5-0.5b:bf16 qwen2.5-0.5b:q4_k_m \
            qwen3-0.6b:q4_k_m; do
  like=${spec%%:*} dt=${spec##*:}
  out="$dir/$like-$dt"
  if [ ! -e "$out/model.gguf" ]; then
    "$anvil" init-model --like "$like" --dtype "$dt" --format gguf --out "$out" >/dev/null
  fi
done
default=$("$anvil" default-model)

run() {  # MODEL PROMPT GEN -> one JSON line per repeat
  for _ in $(seq "$repeats"); do
    "$anvil" bench "$1" --threads "$threads" --prompt-len "$2" --gen-len "$3" --repeats 1 --json
  done
}
peer_run() {  # MODEL -> {pp128, pp2048, tg64} tok/s from llama-bench (nulls without the peer)
  if [ -z "$peer" ]; then
    echo '{"pp128": null, "pp2048": null, "tg64": null}'
    return
  fi
  # A crash of llama-bench leaves its cells empty (null) instead of stopping the table.
  local out
  if ! out=$({ "$peer" -m "$1" -t "$threads" -p 128 -n 64 -r "$repeats" -o jsonl
               "$peer" -m "$1" -t "$threads" -p 2048 -n 0 -r 1 -o jsonl; } 2>/dev/null); then
    echo "cpu_vs_floor.sh: llama-bench failed on $1; its missing figures are left empty" >&2
  fi
  echo "$out" | jq -s '
    {pp128: (map(select(.n_prompt == 128 and .n_gen == 0)) | .[0].avg_ts),
     pp2048: (map(select(.n_prompt == 2048 and .n_gen == 0)) | .[0].avg_ts),
     tg64: (map(select(.n_gen == 64 and .n_prompt == 0)) | .[0].avg_ts)}'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for spec in "Q8_0|$dir/qwen2.5-0.5b-q8_0/model.gguf" "Q4_0|$dir/qwen2.5-0.5b-q4_0/model.gguf" \
            "BF16|$dir/qwen2.5-0.5b-bf16/model.gguf" "Q4_K_M|$dir/qwen2.5-0.5b-q4_k_m/model.gguf" \
            "Qwen3-0.6B Q4_K_M|$dir/qwen3-0.6b-q4_k_m/model.gguf" \
            "SmolLM2-135M Q4_1 (default)|$default"; do
  IFS='|' read -r name model <<<"$spec"
  short=$(run "$model" 128 64 | jq -s '.')
  long=$(run "$model" 2048 1 | jq -s '.')
  llama=$(peer_run "$model")
  jq -n --arg name "$name" --argjson s "$short" --argjson l "$long" --argjson p "$llama" '
    def median: sort | .[(length / 2 | floor)];
    {name: $name,
     prefill128: ([$s[].prefill_tok_s] | median),
     prefill2048: ([$l[].prefill_tok_s] | median),
     decode: ([$s[].decode_tok_s] | median),
     floor: ([$s[].decode_floor_tok_s] | median),
     fraction: ([$s[].decode_fraction_of_floor] | median),
     fraction_kv: ([$s[].decode_fraction_of_floor_with_kv] | median),
     membw: ([$s[].membw_gb_s] | median),
     membw_min: ([$s[].membw_min_gb_s] | min),
     membw_max: ([$s[].membw_max_gb_s] | max),
     mb: ($s[0].weight_bytes_per_step / 1e6),
     peer: $p}' >>"$results"
done

if [ "${LLAMA_CPP_AMX:-1}" = 0 ]; then
  echo "anvil and llama.cpp (llama-bench, built here without its AMX path: LLAMA_CPP_AMX=0)," \
    "$threads threads, median of $repeats runs"
else
  echo "anvil and llama.cpp (llama-bench, built natively here), $threads threads, median of $repeats runs"
fi
echo "(llama.cpp: the mean of its $repeats repetitions; prefill 2048 one run each); floor = weight bytes"
echo "per step / read bandwidth measured right before and after each timed anvil decode (decode as a"
echo "share of it computed per run, then the median; the bandwidth column gives the median and, in"
echo "brackets, every sample's range). The issue quotes llama.cpp at 489 / 481 / 138 tok/s prefill and"
echo "45.5 / 65.6 / 17.3 decode (Q8_0 / Q4_0 / BF16) from its own machine. The last column sets anvil's"
echo "decode against the bytes a step must read: the weights and the KV cache up to its position (anvil"
echo "decodes after a 128-token prompt; llama-bench's tg64 after none)."
echo
echo "| weights | prefill 128: anvil / llama.cpp (ratio) | prefill 2048: anvil / llama.cpp | decode: anvil / llama.cpp | floor tok/s (MB/step @ GB/s) | anvil decode / floor | llama.cpp decode / floor | anvil decode / floor with KV |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
jq -r -s '
  def f0: if . == null then "-" else floor | tostring end;
  def f1: if . == null then "-" else . * 10 | floor / 10 | tostring end;
  .[] | "| \(.name) | \(.prefill128 | f0) / \(.peer.pp128 | f0)" +
    (if .peer.pp128 == null then "" else " (\(.prefill128 / .peer.pp128 * 100 | floor / 100)x)" end) +
    " | \(.prefill2048 | f0) / \(.peer.pp2048 | f0) | \(.decode | f1) / \(.peer.tg64 | f1) | \(.floor | f1) (\(.mb | floor) MB @ \(.membw | f1) [\(.membw_min | f1)-\(.membw_max | f1)]) | \(.fraction * 100 | floor)% | " +
    (if .peer.tg64 == null then "-" else "\(.peer.tg64 / .floor * 100 | floor)%" end) +
    " | \(.fraction_kv * 100 | floor)% |"' "$results"
