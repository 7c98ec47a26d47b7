#!/usr/bin/env bash
# Batch-1 decode on the GPU machine, A/B over environment switches, plus one step's kernels
# under Nsight Compute. Uses the binaries `scripts/gpu-check prepare` staged in .gpu/.
#
#   bench/cuda_decode_profile.sh [VAR=VALUE ...]   each argument is one more configuration,
#                                                  measured beside the default, interleaved
#   BINS="anvil anvil-old"                         binaries of .gpu/ to compare, each with
#                                                  every configuration (default: anvil)
#   NO_NCU=1                                       skips Nsight Compute
# Writes $OUT/profile.txt (decode tok/s per round, then each binary's one-launch kernel phase
# profile, ANVIL_CUDA_DECODE_PROFILE, of the second step: phases, stragglers and attention
# items) and $OUT/ncu.txt (or under out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out}"
bin="$PWD/.gpu"
models="${MODELS:-/tmp/anvil-gpu-models}"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p "$out"
log="$out/profile.txt"
for like in qwen2.5-0.5b qwen3-0.6b; do
  [ -f "$models/$like/config.json" ] ||
    "$bin/anvil" init-model --like "$like" --dtype bf16 --seed 1 --out "$models/$like" >/dev/null
done
configs=("" "$@")
read -r -a bins <<<"${BINS:-anvil}"
for round in 1 2 3; do
  for like in qwen2.5-0.5b qwen3-0.6b; do
    for b in "${bins[@]}"; do
      for c in "${configs[@]}"; do
        tok=$(env $c "$bin/$b" bench "$models/$like" --device cuda --dtype bf16 --prompt-len 128 \
          --gen-len 256 --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["decode_tok_s"]))')
        echo "round $round $like $b ${c:-default}: $tok tok/s" | tee -a "$log"
      done
    done
  done
done
for like in qwen2.5-0.5b qwen3-0.6b; do
  for b in "${bins[@]}"; do
    echo "== profile $like $b" >>"$log"
    ANVIL_CUDA_DECODE_PROFILE=1 "$bin/$b" bench "$models/$like" --device cuda --dtype bf16 \
      --prompt-len 128 --gen-len 64 --repeats 1 2>&1 >/dev/null |
      awk '/decode_layers profile/ {n++} n == 2 && shown < 13 {print; shown++}' >>"$log"
  done
done
if command -v ncu >/dev/null && [ -z "${NO_NCU:-}" ]; then
  # One decode step of Qwen2.5-0.5B: the kernels after prefill and the first steps.
  ncu --clock-control none --launch-skip 1500 --launch-count 200 --print-summary per-kernel \
    --metrics gpu__time_duration.sum "$bin/anvil" bench "$models/qwen2.5-0.5b" --device cuda \
    --dtype bf16 --prompt-len 128 --gen-len 16 >"$out/ncu.txt" 2>&1
fi
