#!/usr/bin/env bash
# anvil perplexity beside transformers' guide loop on the same weights and ids, in one call:
#   bench/perplexity_vs_transformers.sh MODEL_DIR [TOKENS] [MAX_LENGTH] [STRIDE]
# BINS ("anvil anvil_base": binaries in .gpu/ timed in turn; default anvil),
# DEVICE (cuda), DTYPE (bf16), ROUNDS (2). Random ids (seed 1) over the model's vocabulary.
# transformers' figure weighs each window's mean loss as its guide does, so its perplexity is a
# little off anvil's where windows overlap (anvil counts each scored token once).
set -euo pipefail
model="$1"
tokens="${2:-16384}" max_length="${3:-1024}" stride="${4:-512}"
device="${DEVICE:-cuda}" dtype="${DTYPE:-bf16}"
here="$(cd "$(dirname "$0")" && pwd)"
ids="$(mktemp)"
python3 - "$model" "$tokens" "$ids" <<'PY'
import json, random, sys
vocab = json.load(open(sys.argv[1] + "/config.json"))["vocab_size"]
random.seed(1)
open(sys.argv[3], "w").write(",".join(str(random.randrange(vocab)) for _ in range(int(sys.argv[2]))))
PY
for round in $(seq "${ROUNDS:-2}"); do
  for bin in ${BINS:-anvil}; do
    # A binary from before --batch-size runs once, without it.
    batches="-"
    if ".gpu/$bin" perplexity --help | grep -q -- --batch-size; then batches="1 0"; fi
    for batch in $batches; do
      flag=()
      [ "$batch" != - ] && flag=(--batch-size "$batch")
      start=$(date +%s%N)
      out=$(".gpu/$bin" perplexity "$model" --input-ids "$(cat "$ids")" --max-length "$max_length" \
        --stride "$stride" --device "$device" --dtype "$dtype" "${flag[@]}" --json --quiet 2>&1 ||
        echo failed)
      end=$(date +%s%N)
      echo "round $round $bin batch-size $batch: $(((end - start) / 1000000)) ms wall, load included; $out"
    done
  done
  python3 "$here/transformers_perplexity.py" "$model" "$ids" --device "$device" --dtype "$dtype" \
    --max-length "$max_length" --stride "$stride" | sed "s/^/round $round transformers: /"
done
rm -f "$ids"
