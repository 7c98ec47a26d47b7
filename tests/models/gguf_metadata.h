// A GGUF of metadata only, for the tests of what open_gguf_model reads and refuses.
#pragma once

#include <functional>
#include <string>

#include "formats/gguf_writer.h"
#include "temp_dir.h"

namespace anvil::test {

// A GGUF of metadata only (enough for open_gguf_model): `arch`'s dimensions (4 heads of 16),
// a training context of 4096, `keys`, a two-token vocabulary.
inline std::string metadata_gguf(const test::TempDir& dir, const std::string& name,
                                 const std::string& arch,
                                 const std::function<void(GgufWriter&)>& keys) {
  const std::string path = dir.file(name);
  const std::string a = arch + ".";
  GgufWriter w(path);
  w.add_string("general.architecture", arch);
  w.add_u32(a + "block_count", 1);
  w.add_u32(a + "context_length", 4096);
  w.add_u32(a + "embedding_length", 64);
  w.add_u32(a + "feed_forward_length", 128);
  w.add_u32(a + "attention.head_count", 4);
  keys(w);
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  w.add_string_array("tokenizer.ggml.merges", {});
  w.finish();
  return path;
}

}  // namespace anvil::test
