// Tokenizer throughput: encodes a text file with a tokenizer.json, single-threaded, and prints
// tokens per second (median of several runs). bench/tokenizer_vs_hf.sh runs it beside Hugging
// Face tokenizers on the same file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "anvil/error.h"
#include "anvil/tokenizer.h"
#include "formats/mapped_file.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXT_FILE [RUNS]\n", argv[0]);
    return 2;
  }
  try {
    const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
    const auto t0 = std::chrono::steady_clock::now();
    const anvil::Tokenizer tok = anvil::Tokenizer::from_file(argv[1]);
    const double load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = anvil::read_text_file(argv[2]);
    std::vector<double> times;
    size_t n = 0;
    for (int r = 0; r < runs + 1; ++r) {  // the first run warms the word cache, as HF's does
      const auto a = std::chrono::steady_clock::now();
      n = tok.encode(text, false).size();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
      if (r > 0) times.push_back(s);
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf("anvil: %zu bytes -> %zu tokens, median %.3f s, %.0f tokens/s (load %.2f s)\n",
                text.size(), n, median, static_cast<double>(n) / median, load_s);
  } catch (const anvil::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
