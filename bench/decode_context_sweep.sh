#!/usr/bin/env bash
# Batch-1 decode across context lengths, for each of some environment settings, interleaved
# round by round: how a switch's effect depends on the context (the one-launch CUDA kernel's
# attention split length, ANVIL_CUDA_DECODE_SPLIT_KEYS, was the reason: one split while a
# head's keys fit, no combine, but more keys an item).
#
#   bench/decode_context_sweep.sh [VAR=VALUE ...]   each argument one more setting, measured
#                                                   beside the default
#   MODELS="qwen2.5-0.5b qwen3-0.6b"   init-model presets (bf16 random weights)
#   PROMPTS="128 256 384 600 1000"     prompt lengths; each run decodes GEN tokens after it
#   GEN=64 ROUNDS=2 DEVICE=cuda ANVIL=.gpu/anvil
# Prints one line per (model, prompt, setting): the decode tok/s of each round. Writes
# $OUT/context_sweep.txt (or out/).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out="${OUT:-out}"
anvil="${ANVIL:-$PWD/.gpu/anvil}"
device="${DEVICE:-cuda}"
gen="${GEN:-64}"
rounds="${ROUNDS:-2}"
models_dir="${MODELS_DIR:-/tmp/anvil-sweep-models}"
mkdir -p "$out" "$models_dir"
log="$out/context_sweep.txt"
: >"$log"
settings=("" "$@")
declare -A results
for like in ${MODELS:-qwen2.5-0.5b qwen3-0.6b}; do
  [ -f "$models_dir/$like/config.json" ] ||
    "$anvil" init-model --like "$like" --dtype bf16 --seed 1 --out "$models_dir/$like" >/dev/null ||
    { echo "init-model $like failed" >&2; exit 1; }
done
for _ in $(seq "$rounds"); do
  for like in ${MODELS:-qwen2.5-0.5b qwen3-0.6b}; do
    for prompt in ${PROMPTS:-128 256 384 600 1000}; do
      for s in "${settings[@]}"; do
        tok=$(env ${s:+"$s"} "$anvil" bench "$models_dir/$like" --device "$device" --dtype bf16 \
          --prompt-len "$prompt" --gen-len "$gen" --json 2>/dev/null |
          python3 -c 'import json,sys; print(round(json.load(sys.stdin)["decode_tok_s"], 1))' ||
          echo failed)
        key="$like $prompt ${s:-default}"
        results[$key]="${results[$key]:-} $tok"
      done
    done
  done
done
for like in ${MODELS:-qwen2.5-0.5b qwen3-0.6b}; do
  for prompt in ${PROMPTS:-128 256 384 600 1000}; do
    for s in "${settings[@]}"; do
      key="$like $prompt ${s:-default}"
      echo "$key:${results[$key]} tok/s" | tee -a "$log"
    done
  done
done
