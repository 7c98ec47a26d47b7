#!/usr/bin/env bash
# A conversation's turns through `anvil chat --timings`, with the prompt cache and without it
# (--no-prompt-cache), alternated ROUNDS times: each turn's prompt tokens, how many came from
# the cache, and the time to its first new token.
#
#   bench/chat_turns.sh [MODEL] [ROUNDS] [MAX_NEW]    (default: anvil's default model, 2, 64)
#
# The turns are TURNS (a file of one message per line), else eight built-in questions.
set -euo pipefail
cd "$(dirname "$0")/.."
anvil=${ANVIL:-build/anvil}
model=${1:-$("$anvil" default-model)}
rounds=${2:-2}
max_new=${3:-64}
turns=${TURNS:-}
if [ -z "$turns" ]; then
  turns=$(mktemp)
  trap 'rm -f "$turns"' EXIT
  cat >"$turns" <<'TURNS'
Tell me about the history of the city of Paris, from its founding to the present day.
What are the most famous museums there, and what can I see in each of them?
How would you plan a three-day visit for someone who likes art and food?
Which neighbourhoods are best to stay in, and why?
What should I know about public transport in the city?
Can you suggest a few day trips from Paris by train?
What is the best season to visit, considering weather and crowds?
Summarise everything you told me in five short bullet points.
TURNS
fi
for round in $(seq "$rounds"); do
  for mode in cache --no-prompt-cache; do
    flag=$([ "$mode" = cache ] && echo "" || echo "$mode")
    echo "== round $round, ${mode#--}"
    "$anvil" chat "$model" --greedy --max-new-tokens "$max_new" --threads "${THREADS:-2}" \
      --timings $flag <"$turns" 2>&1 >/dev/null | grep '^\[prompt'
  done
done
