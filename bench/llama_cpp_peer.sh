#!/usr/bin/env bash
# Builds llama.cpp's llama-bench on this machine, natively (-march=native: AVX-512, VNNI, AMX
# wherever the CPU has them), so the CPU benchmarks can set anvil beside llama.cpp in one run on
# the same GGUF files. The source is the copy of llama.cpp that the llama-cpp-python source
# package on PyPI carries (vendor/llama.cpp, pinned below): this machine reaches PyPI and
# Debian's packages only. Nothing of llama.cpp is kept in the repository; the build lives in
# $ANVIL_BENCH_DIR (default /tmp/anvil-bench) and is reused.
# Usage: bench/llama_cpp_peer.sh        prints the path of llama-bench (building it if needed)
set -euo pipefail
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
dir="${ANVIL_BENCH_DIR:-/tmp/anvil-bench}/llama.cpp-$version"
bin="$dir/build/bin/llama-bench"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  if [ ! -d "$dir/src" ]; then
    python3 -m pip download --quiet --no-binary :all: --no-deps -d "$dir/download" \
      "llama-cpp-python==$version" >&2
    mkdir -p "$dir/src"
    tar -xzf "$dir/download/llama_cpp_python-$version.tar.gz" -C "$dir/src" --strip-components=1
  fi
  # Its compiler warnings are not ours to read: the build's output goes to a log, shown on failure.
  echo "building llama-bench (llama.cpp from llama-cpp-python $version; ~10 min on 2 cores)," \
    "log in $dir/build.log" >&2
  if ! { cmake -S "$dir/src/vendor/llama.cpp" -B "$dir/build" -G Ninja \
           -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
           -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF &&
         ninja -C "$dir/build" llama-bench; } >"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log" >&2
    echo "llama_cpp_peer.sh: building llama-bench failed (log: $dir/build.log)" >&2
    exit 1
  fi
fi
echo "$bin"
