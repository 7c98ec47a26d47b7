// PromptCache::save / load: a cache written by one process and read by another (another
// CausalLM of the same files) continues exactly as the cache itself does; a file that another
// model made, that is not a prompt cache, or whose tensors lie is refused with its path and
// the problem, and leaves the cache as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

struct Fixture {
  CausalLM model;
  std::vector<int64_t> a, whole;  // prompt a and its 40-token greedy continuation (gen_long_a)
};
Fixture load(const std::string& name, const ModelOptions& mo = {}) {
  const auto golden = SafetensorsFile::open(test::golden_path(name));
  return Fixture{CausalLM::from_pretrained(test::model_dir(name), mo),
                 test::id_rows(golden, "input_ids_a")[0], test::id_rows(golden, "gen_long_a")[0]};
}

std::vector<int64_t> first(const std::vector<int64_t>& ids, size_t n) {
  return std::vector<int64_t>(ids.begin(), ids.begin() + static_cast<int64_t>(n));
}

// A cache saved after 10 tokens: the saved file, and the tokens it holds.
struct Saved {
  test::TempDir dir;
  std::string path;
  std::vector<int64_t> tokens, out;
};
void save_after_ten(const Fixture& f, Saved& s) {
  PromptCache cache;
  GenerateOptions o = test::greedy_exactly(10);
  o.prompt_cache = &cache;
  s.out = f.model.generate(f.a, o);
  s.path = s.dir.file("cache.safetensors");
  cache.save(s.path);
  s.tokens = cache.tokens();
}

class PromptCacheFile : public ::testing::TestWithParam<std::string> {};

// Another model object of the same files (as a later process would load them) takes the file
// and continues as one 40-token generate does, running only what follows the saved tokens.
TEST_P(PromptCacheFile, ALaterProcessContinuesFromTheFile) {
  const Fixture f = load("extra/" + GetParam());
  ASSERT_EQ(f.whole.size(), f.a.size() + 40);
  Saved s;
  save_after_ten(f, s);
  EXPECT_EQ(s.out, first(f.whole, f.a.size() + 10));

  const Fixture later = load("extra/" + GetParam());
  PromptCache cache;
  cache.load(s.path, later.model);
  EXPECT_EQ(cache.tokens(), s.tokens);
  GenerateOptions o = test::greedy_exactly(30);
  o.prompt_cache = &cache;
  EXPECT_EQ(later.model.generate(s.out, o), f.whole);
  EXPECT_EQ(cache.reused(), static_cast<int64_t>(s.out.size()) - 1);

  // Saving again replaces the file with the longer conversation.
  cache.save(s.path);
  PromptCache again;
  again.load(s.path, later.model);
  EXPECT_EQ(again.tokens(), first(f.whole, f.whole.size() - 1));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PromptCacheFile,
                         ::testing::Values("mistral-window-tiny", "qwen2-window-layers-tiny",
                                           "gemma3-text-tiny"),
                         test::ParamName());

// The file's tensors copied into a new file with one change made by `edit`.
void rewrite(const std::string& from, const std::string& to,
             const std::function<void(const std::string& name, Tensor& t,
                                      std::map<std::string, std::string>& meta)>& edit) {
  const auto file = SafetensorsFile::open(from);
  std::map<std::string, std::string> meta = file.metadata();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& e : file.entries()) {
    const Tensor view = file.load(e.name).contiguous();
    Tensor owned = Tensor::empty(view.shape(), view.dtype());  // not a view of the mapping
    std::memcpy(owned.raw(), view.raw(), view.nbytes());
    tensors.emplace_back(e.name, owned);
  }
  for (auto& [name, t] : tensors) edit(name, t, meta);
  SafetensorsWriter w(to);
  for (const auto& [k, v] : meta) w.set_metadata(k, v);
  for (const auto& [name, t] : tensors) {
    if (t.defined()) w.add(name, t);
  }
  w.finish();
}

class PromptCacheFileRefusals : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    f_ = new Fixture(load("extra/qwen2-window-layers-tiny"));
    s_ = new Saved();
    save_after_ten(*f_, *s_);
  }
  static void TearDownTestSuite() {
    delete f_;
    delete s_;
  }
  // Loading `path` fails with a message that names it and says `message`, and leaves a filled
  // cache as it was.
  static void expect_refused(const std::string& path, const std::string& message,
                             const CausalLM* model = nullptr) {
    PromptCache cache;
    cache.load(s_->path, f_->model);
    expect_error([&] { cache.load(path, model ? *model : f_->model); }, message, path + ": ");
    EXPECT_EQ(cache.tokens(), s_->tokens);
  }
  static inline Fixture* f_ = nullptr;
  static inline Saved* s_ = nullptr;
};

TEST_F(PromptCacheFileRefusals, AnotherModelsFile) {
  const Fixture other = load("extra/mistral-window-tiny");
  expect_refused(s_->path, "made by another model", &other.model);
}

TEST_F(PromptCacheFileRefusals, TheSameFilesInAnotherDtype) {
  ModelOptions mo;
  mo.dtype = DType::bf16;
  const CausalLM bf16 =
      CausalLM::from_pretrained(test::model_dir("extra/qwen2-window-layers-tiny"), mo);
  expect_refused(s_->path, "made by another model", &bf16);
}

TEST_F(PromptCacheFileRefusals, NotAPromptCache) {
  const std::string weights =
      test::model_dir("extra/qwen2-window-layers-tiny") + "/model.safetensors";
  expect_refused(weights, "not an anvil prompt cache");
  test::TempDir dir;
  const std::string text = dir.file("text");
  std::ofstream(text) << "hello";
  expect_refused(text, "");
}

TEST_F(PromptCacheFileRefusals, TruncatedFile) {
  test::TempDir dir;
  const std::string cut = dir.file("cut.safetensors");
  std::filesystem::copy_file(s_->path, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 100);
  expect_refused(cut, "");
}

TEST_F(PromptCacheFileRefusals, LyingTensors) {
  test::TempDir dir;
  const std::string bad = dir.file("bad.safetensors");
  const auto refused_after = [&](const std::string& message, const auto& edit) {
    SCOPED_TRACE(message);
    rewrite(s_->path, bad, edit);
    expect_refused(bad, message);
  };
  refused_after("prompt cache format version 2",
                [](auto&, Tensor&, auto& meta) { meta["anvil.prompt_cache"] = "2"; });
  refused_after("made by another model",
                [](auto&, Tensor&, auto& meta) { meta["anvil.fingerprint"] = "0123"; });
  refused_after("'layers.1.values' is", [](const std::string& name, Tensor& t, auto&) {
    if (name == "layers.1.values") t = t.view({t.size(0) * t.size(1), t.size(2)}).contiguous();
  });
  refused_after("'layers.0.keys' is", [](const std::string& name, Tensor& t, auto&) {
    if (name == "layers.0.keys") t = t.to(DType::f16);
  });
  refused_after("outside the vocabulary", [](const std::string& name, Tensor& t, auto&) {
    if (name == "tokens") t.data<int64_t>()[3] = 1 << 30;
  });
  refused_after("'tokens' must be int64", [](const std::string& name, Tensor& t, auto&) {
    if (name == "tokens") t = t.to(DType::f32);
  });
  refused_after("tensors, a prompt cache of this model has",
                [](const std::string& name, Tensor& t, auto&) {
                  if (name == "layers.0.values") t = Tensor();
                });
  // More positions in the layers than tokens.
  refused_after("'layers.0.keys' is", [](const std::string& name, Tensor& t, auto&) {
    if (name == "tokens") {
      std::vector<int64_t> ids = t.to_i64_vector();
      ids.pop_back();
      t = Tensor::from_i64(ids, {static_cast<int64_t>(ids.size())});
    }
  });
}

TEST(PromptCacheFileSave, NothingToSave) {
  test::TempDir dir;
  PromptCache cache;
  expect_error([&] { cache.save(dir.file("c.safetensors")); }, "holds no tokens to save");
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.safetensors")));
}

}  // namespace
}  // namespace anvil
