#!/usr/bin/env bash
# On the GPU machine (docs/perf.md, fifty-fourth session): the hand-off bench (staggered passes,
# grouped pollers), the decode kernel's grouped pollers (ANVIL_CUDA_DECODE_POLL_GROUPS) tested
# and A/B'd against one poller a vector, and decode profiles; results under $OUT (or out/).
set -u
out="${OUT:-out}"; mkdir -p "$out"
cd "$(dirname "$0")/.."
# The binaries as `scripts/gpu-check prepare` stages them in .gpu/, or packed in
# .gpu/bundle.tar.xz.
[ -f .gpu/bundle.tar.xz ] && tar -C .gpu -xJf .gpu/bundle.tar.xz
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null || true); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu0.txt"
echo "== handoff bench, Qwen2.5-0.5B sizes" | tee "$out/handoff.txt"
timeout 60 .gpu/anvil_cuda_handoff_bench 896 4864 1152 2>&1 | tee -a "$out/handoff.txt"
m=/tmp/anvil-gpu-models; mkdir -p $m
for like in qwen2.5-0.5b qwen3-0.6b; do
  .gpu/anvil init-model --like "$like" --dtype bf16 --seed 1 --out "$m/$like" >/dev/null
done
for g in 4 1; do
  echo "== tests with ANVIL_CUDA_DECODE_POLL_GROUPS=$g" | tee -a "$out/grouped-tests.txt"
  ANVIL_CUDA_DECODE_POLL_GROUPS=$g ANVIL_TEST_DATA="$PWD/tests/data" timeout 80 .gpu/anvil_tests \
    --gtest_filter='*DecodeLayers*:DeviceDecode*-*/cpu' --gtest_brief=1 2>&1 | tail -4 | tee -a "$out/grouped-tests.txt"
done
for round in 1 2; do
  for like in qwen2.5-0.5b qwen3-0.6b; do
    for v in "1 0" "2 650" "4 330" "4 0"; do
      set -- $v
      tok=$(ANVIL_CUDA_DECODE_POLL_GROUPS=$1 ANVIL_CUDA_DECODE_POLL_GAP=$2 timeout 40 .gpu/anvil bench "$m/$like" --device cuda --dtype bf16 \
        --prompt-len 128 --gen-len 256 --json 2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["decode_tok_s"]))')
      echo "round $round $like groups $1 gap $2: $tok tok/s" | tee -a "$out/grouped-ab.txt"
    done
  done
done
for v in "1 0" "4 330"; do
  set -- $v
  echo "== profile qwen2.5-0.5b groups $1 gap $2" | tee -a "$out/profile.txt"
  ANVIL_CUDA_DECODE_POLL_GROUPS=$1 ANVIL_CUDA_DECODE_POLL_GAP=$2 ANVIL_CUDA_DECODE_PROFILE=1 \
    timeout 40 .gpu/anvil bench "$m/qwen2.5-0.5b" --device cuda --dtype bf16 --prompt-len 128 --gen-len 32 2>&1 |
    grep -v "last block" | head -9 >> "$out/profile.txt"
done
echo "== handoff bench, Qwen3-0.6B sizes" | tee -a "$out/handoff.txt"
timeout 60 .gpu/anvil_cuda_handoff_bench 1024 3072 4096 2>&1 | tee -a "$out/handoff.txt"
