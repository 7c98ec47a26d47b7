#!/usr/bin/env bash
# Greedy decoding of a prompt whose answer repeats it (bench/data/lookup_prompt.txt: a function
# to rewrite with type hints), with prompt lookup (--prompt-lookup N) and without, alternated
# ROUNDS times (bench/speculative_ab.sh does the timing).
#
#   bench/prompt_lookup.sh MODEL [NEW_TOKENS] [LOOKUP] [ROUNDS] [PROMPT_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/speculative_ab.sh "$1" "${2:-128}" "${4:-3}" "${5:-bench/data/lookup_prompt.txt}" \
  --prompt-lookup "${3:-10}"
