#!/usr/bin/env bash
# num_return_sequences samples of one prompt, with the prompt step shared by the copies and
# without (ANVIL_NO_SHARED_PREFILL=1), alternated ROUNDS times: wall time of `anvil generate`.
#
#   bench/shared_prefill.sh MODEL [PROMPT_LEN] [SEQUENCES] [NEW_TOKENS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
anvil=${ANVIL:-build/anvil}
model=$1
len=${2:-256}
n=${3:-8}
new=${4:-16}
rounds=${5:-3}
ids=$(seq -s, 1000 $((1000 + len - 1)))
for round in $(seq "$rounds"); do
  for mode in shared copies; do
    env=$([ "$mode" = copies ] && echo ANVIL_NO_SHARED_PREFILL=1 || echo ANVIL_UNUSED=1)
    start=$(date +%s.%N)
    env "$env" "$anvil" generate "$model" --input-ids "$ids" --num-return-sequences "$n" \
      --temperature 1 --seed 1 --max-new-tokens "$new" --min-new-tokens "$new" \
      --threads "${THREADS:-2}" --output-ids >/dev/null
    end=$(date +%s.%N)
    awk -v r="$round" -v m="$mode" -v n="$n" -v l="$len" -v g="$new" -v s="$start" -v e="$end" \
      'BEGIN { printf "round %d, %-7s %d x %d-token prompt, %d new tokens: %.2f s\n", r, m, n, l, g, e - s }'
  done
done
