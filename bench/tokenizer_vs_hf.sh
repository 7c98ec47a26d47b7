#!/usr/bin/env bash
# anvil's tokenizer beside Hugging Face tokenizers on one ~1 MB mixed-language text, both
# single-threaded, in one run. Usage: bench/tokenizer_vs_hf.sh [TOKENIZER_JSON]
set -euo pipefail
cd "$(dirname "$0")/.."
tok="${1:-tests/data/tokenizers/qwen3/tokenizer.json}"
scripts/build build >/dev/null
python3 -c "import tokenizers" 2>/dev/null || python3 -m pip install -q tokenizers
text=$(mktemp --suffix=.txt)
python3 bench/make_mixed_text.py "$text"
./build/bench/anvil_tokenizer_bench "$tok" "$text" 5
python3 bench/tokenizer_hf.py "$tok" "$text" 5
rm -f "$text"
