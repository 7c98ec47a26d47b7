#!/usr/bin/env bash
# Greedy decoding with a speculative mode (the flags after the prompt file: --prompt-lookup N,
# --assistant-model PATH, ...) and without, alternated ROUNDS times. Each mode's decode time is
# the wall time of `anvil generate` for NEW tokens less that of a run for one token (load and
# prompt), so the rate is of the new tokens alone. Both modes must print the same text (greedy
# either way; a near tie may still flip: docs/design.md, "Speculative decoding").
#
#   bench/speculative_ab.sh MODEL NEW_TOKENS ROUNDS PROMPT_FILE FLAGS...
set -euo pipefail
cd "$(dirname "$0")/.."
anvil=${ANVIL:-build/anvil}
model=$1
new=$2
rounds=$3
prompt=$(cat "$4")
shift 4
flags=("$@")
run() {  # $1: new tokens, rest: extra flags; prints the wall seconds, the text to $out
  local n=$1
  shift
  local start end
  start=$(date +%s.%N)
  "$anvil" generate "$model" "$prompt" --greedy --max-new-tokens "$n" --min-new-tokens "$n" \
    --threads "${THREADS:-2}" "$@" >"$out" 2>"$out.err"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for round in $(seq "$rounds"); do
  out=$tmp/base1 base1=$(run 1)
  out=$tmp/plain plain=$(run "$new")
  out=$tmp/spec1 spec1=$(run 1 "${flags[@]}")
  out=$tmp/spec spec=$(run "$new" "${flags[@]}")
  same=$(cmp -s "$tmp/plain" "$tmp/spec" && echo "same text" || echo "TEXT DIFFERS")
  awk -v r="$round" -v n="$new" -v b="$base1" -v p="$plain" -v l1="$spec1" -v l="$spec" \
    -v s="$same" -v info="$(cat "$tmp/spec.err")" -v mode="${flags[*]}" \
    'BEGIN { printf "round %d, %d new tokens: plain %.1f tok/s, %s %.1f tok/s (%.2fx; %s; %s)\n",
             r, n, (n - 1) / (p - b), mode, (n - 1) / (l - l1), (p - b) / (l - l1), s, info }'
done
