// Sentence-embedding pooling as sentence-transformers' Pooling and Normalize modules compute
// it, and the modes a model folder's modules.json and Pooling config name; malformed files
// refused with their path.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "generate/pooling.h"
#include "temp_dir.h"

namespace anvil {
namespace {

using test::expect_error;
using test::TempDir;

// Three tokens of two values: rows (1, -2), (3, 0), (5, 4).
const std::vector<float> kStates = {1, -2, 3, 0, 5, 4};

std::vector<float> pooled(Pooling p, bool normalize = false) {
  return pool(kStates, 3, 2, p, normalize);
}

TEST(Pooling, EachModeAsSentenceTransformers) {
  EXPECT_EQ(pooled(Pooling::last), (std::vector<float>{5, 4}));
  EXPECT_EQ(pooled(Pooling::cls), (std::vector<float>{1, -2}));
  EXPECT_EQ(pooled(Pooling::max), (std::vector<float>{5, 4}));
  EXPECT_EQ(pooled(Pooling::mean), (std::vector<float>{3, 2.0f / 3}));
  const float root3 = std::sqrt(3.0f);
  const auto sqrt_len = pooled(Pooling::mean_sqrt_len);
  EXPECT_FLOAT_EQ(sqrt_len[0], 9 / root3);
  EXPECT_FLOAT_EQ(sqrt_len[1], 2 / root3);
  // Weights 1, 2, 3 by position: (1 + 6 + 15) / 6, (-2 + 0 + 12) / 6.
  const auto weighted = pooled(Pooling::weighted_mean);
  EXPECT_FLOAT_EQ(weighted[0], 22.0f / 6);
  EXPECT_FLOAT_EQ(weighted[1], 10.0f / 6);
  // Normalised: unit length, same direction; a zero vector stays zero.
  const auto unit = pooled(Pooling::last, true);
  EXPECT_FLOAT_EQ(unit[0], 5 / std::sqrt(41.0f));
  EXPECT_FLOAT_EQ(unit[1], 4 / std::sqrt(41.0f));
  EXPECT_EQ(pool(std::vector<float>{0, 0}, 1, 2, Pooling::last, true), (std::vector<float>{0, 0}));
  // Max of negative rows is not 0.
  EXPECT_EQ(pool(std::vector<float>{-3, -1, -2, -5}, 2, 2, Pooling::max, false),
            (std::vector<float>{-2, -1}));
}

TEST(Pooling, Refusals) {
  expect_error([] { pooling_named("median"); }, "pooling 'median': anvil pools by last, mean");
  EXPECT_EQ(pooling_named("weighted_mean"), Pooling::weighted_mean);
  expect_error([] { pool(kStates, 2, 2, Pooling::mean, false); }, "6 values are not 2 tokens x 2");
  expect_error([] { pool({}, 0, 2, Pooling::mean, false); }, "0 tokens x 2");
}

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

const char* kModules = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";

TEST(SentenceTransformersConfig, PoolingAndNormalizeFromTheFolder) {
  TempDir dir;
  EXPECT_FALSE(read_sentence_transformers(dir.path()).pooling);  // no modules.json: nothing
  EXPECT_FALSE(read_sentence_transformers(dir.path()).normalize);
  write(dir.file("modules.json"), kModules);
  write(dir.file("1_Pooling/config.json"),
        R"({"word_embedding_dimension": 1024, "pooling_mode_cls_token": false,
            "pooling_mode_mean_tokens": false, "pooling_mode_lasttoken": true})");
  SentenceTransformersConfig c = read_sentence_transformers(dir.path());
  EXPECT_EQ(c.pooling, Pooling::last);
  EXPECT_EQ(c.normalize, true);
  write(dir.file("1_Pooling/config.json"), R"({"pooling_mode_mean_tokens": true})");
  write(dir.file("modules.json"), R"([{"type": "sentence_transformers.models.Pooling",
                                      "path": "1_Pooling"}])");
  c = read_sentence_transformers(dir.path());
  EXPECT_EQ(c.pooling, Pooling::mean);
  EXPECT_EQ(c.normalize, false);
  // A file, not a folder (a .gguf): nothing.
  EXPECT_FALSE(read_sentence_transformers(dir.file("modules.json")).pooling);
}

TEST(SentenceTransformersConfig, MalformedFilesNameThemselves) {
  TempDir dir;
  write(dir.file("modules.json"), "[{\"type\": ");
  expect_error([&] { read_sentence_transformers(dir.path()); }, "modules.json: not valid JSON");
  write(dir.file("modules.json"), R"({"type": "x"})");
  expect_error([&] { read_sentence_transformers(dir.path()); }, "must be a JSON array");
  write(dir.file("modules.json"), R"([{"path": "1_Pooling"}])");
  expect_error([&] { read_sentence_transformers(dir.path()); },
               "each module needs a string 'type'");
  write(dir.file("modules.json"), kModules);
  expect_error([&] { read_sentence_transformers(dir.path()); }, "its Pooling module has no");
  write(dir.file("1_Pooling/config.json"), R"({"pooling_mode_mean_tokens": false})");
  expect_error([&] { read_sentence_transformers(dir.path()); }, "no pooling mode anvil has is on");
  write(dir.file("1_Pooling/config.json"), "[1, 2]");
  expect_error([&] { read_sentence_transformers(dir.path()); }, "must be a JSON object");
}

}  // namespace
}  // namespace anvil
