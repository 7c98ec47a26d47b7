#!/usr/bin/env bash
# Greedy decoding of a prompt whose answer repeats it (bench/data/lookup_prompt.txt: a function
# to rewrite with type hints), with prompt lookup (--prompt-lookup N) and without, alternated
# ROUNDS times. Each mode's decode time is the wall time of `anvil generate` for NEW tokens less
# that of a run for one token (load and prompt), so the rate is of the new tokens alone. Both
# modes must print the same text (greedy either way).
#
#   bench/prompt_lookup.sh MODEL [NEW_TOKENS] [LOOKUP] [ROUNDS] [PROMPT_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
anvil=${ANVIL:-build/anvil}
model=$1
new=${2:-128}
lookup=${3:-10}
rounds=${4:-3}
prompt=$(cat "${5:-bench/data/lookup_prompt.txt}")
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
  out=$tmp/lookup1 look1=$(run 1 --prompt-lookup "$lookup")
  out=$tmp/lookup look=$(run "$new" --prompt-lookup "$lookup")
  same=$(cmp -s "$tmp/plain" "$tmp/lookup" && echo "same text" || echo "TEXT DIFFERS")
  awk -v r="$round" -v n="$new" -v b="$base1" -v p="$plain" -v l1="$look1" -v l="$look" \
    -v s="$same" -v info="$(cat "$tmp/lookup.err")" \
    'BEGIN { printf "round %d, %d new tokens: plain %.1f tok/s, prompt lookup %.1f tok/s (%.2fx; %s; %s)\n",
             r, n, (n - 1) / (p - b), (n - 1) / (l - l1), (p - b) / (l - l1), s, info }'
done
