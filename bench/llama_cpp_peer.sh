#!/usr/bin/env bash
# Builds llama.cpp's llama-bench on this machine, natively (-march=native: AVX-512, VNNI, AMX
# wherever the CPU has them), so the CPU benchmarks can set anvil beside llama.cpp in one run on
# the same GGUF files. The source is the copy of llama.cpp that the llama-cpp-python source
# package on PyPI carries (vendor/llama.cpp, pinned below): this machine reaches PyPI and
# Debian's packages only. Nothing of llama.cpp is kept in the repository; the build lives in
# $ANVIL_BENCH_DIR (default /tmp/anvil-bench) and is reused.
# LLAMA_CPP_AMX=0 builds it without its AMX path instead (AVX-512, VNNI and BF16 named one by
# one rather than -march=native), in a build of its own: on two KVM Xeon guests its AMX path
# stopped every quantized run (a general-protection fault in ldtilecfg and an invalid opcode on
# tileloadd in its worker threads) while anvil's tiles ran there.
# Usage: bench/llama_cpp_peer.sh        prints the path of llama-bench (building it if needed)
set -euo pipefail
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
amx="${LLAMA_CPP_AMX:-1}"
src_dir="${ANVIL_BENCH_DIR:-/tmp/anvil-bench}/llama.cpp-$version"
dir="$src_dir"
build_flags=(-DGGML_NATIVE=ON)
if [ "$amx" = 0 ]; then
  build_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
               -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
               -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  dir="$src_dir-no-amx"
fi
bin="$dir/build/bin/llama-bench"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  if [ ! -d "$src_dir/src" ]; then
    python3 -m pip download --quiet --no-binary :all: --no-deps -d "$src_dir/download" \
      "llama-cpp-python==$version" >&2
    mkdir -p "$src_dir/src"
    tar -xzf "$src_dir/download/llama_cpp_python-$version.tar.gz" -C "$src_dir/src" \
      --strip-components=1
  fi
  # Its compiler warnings are not ours to read: the build's output goes to a log, shown on failure.
  echo "building llama-bench (llama.cpp from llama-cpp-python $version; ~10 min on 2 cores)," \
    "log in $dir/build.log" >&2
  if ! { cmake -S "$src_dir/src/vendor/llama.cpp" -B "$dir/build" -G Ninja \
           -DCMAKE_BUILD_TYPE=Release "${build_flags[@]}" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
           -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF &&
         ninja -C "$dir/build" llama-bench; } >"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log" >&2
    echo "llama_cpp_peer.sh: building llama-bench failed (log: $dir/build.log)" >&2
    exit 1
  fi
fi
echo "$bin"
