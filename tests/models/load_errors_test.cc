// Loading a model that is broken in any way gives one clear error naming the file or argument:
// missing files, unknown architectures, tensors of the wrong shape or missing, truncated
// weights, bad devices. Also: Hub ids resolve through the Hugging Face cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "anvil/error.h"
#include "anvil/model.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string load_error(const std::string& path, const ModelOptions& o = {}) {
  try {
    CausalLM::from_pretrained(path, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A copy of qwen3-tiny whose weights are rewritten by `edit` (name, tensor) -> keep?
template <class Edit>
void copy_model(const std::string& dst, Edit edit) {
  const std::string src = test::model_dir("qwen3-tiny");
  fs::copy_file(src + "/config.json", dst + "/config.json");
  const auto f = SafetensorsFile::open(src + "/model.safetensors");
  SafetensorsWriter w(dst + "/model.safetensors");
  for (const auto& e : f.entries()) {
    Tensor t = f.load(e.name);
    if (edit(e.name, t)) w.add(e.name, t);
  }
  w.finish();
}

TEST(LoadErrors, MissingFiles) {
  TempDir dir;
  EXPECT_NE(load_error(dir.path()).find("no config.json"), std::string::npos);
  fs::copy_file(test::model_dir("qwen3-tiny") + "/config.json", dir.file("config.json"));
  EXPECT_NE(load_error(dir.path()).find("no model.safetensors"), std::string::npos);
  EXPECT_NE(load_error(dir.file("nothing/here")).find("no such file"), std::string::npos);
}

TEST(LoadErrors, UnknownArchitecture) {
  TempDir dir;
  std::ofstream(dir.file("config.json")) << R"({"architectures": ["MambaForCausalLM"]})";
  const std::string err = load_error(dir.path());
  EXPECT_NE(err.find("config.json: unknown architecture 'MambaForCausalLM'"), std::string::npos)
      << err;
}

TEST(LoadErrors, TensorOfTheWrongShape) {
  TempDir dir;
  copy_model(dir.path(), [](const std::string& name, Tensor& t) {
    if (name == "model.layers.1.mlp.up_proj.weight") t = t.narrow(0, 0, t.size(0) - 1).contiguous();
    return true;
  });
  const std::string err = load_error(dir.path());
  EXPECT_NE(err.find("model.safetensors: tensor 'model.layers.1.mlp.up_proj.weight' has shape "
                     "[159, 64], but config.json implies [160, 64]"),
            std::string::npos)
      << err;
}

TEST(LoadErrors, MissingTensor) {
  TempDir dir;
  copy_model(dir.path(), [](const std::string& name, Tensor&) {
    return name != "model.layers.0.self_attn.k_norm.weight";
  });
  EXPECT_EQ(load_error(dir.path()),
            "checkpoint has no tensor 'model.layers.0.self_attn.k_norm.weight' (needed by "
            "Qwen3ForCausalLM)");
}

TEST(LoadErrors, IntegerWeights) {
  TempDir dir;
  copy_model(dir.path(), [](const std::string& name, Tensor& t) {
    if (name == "model.norm.weight") t = t.to(DType::i32);
    return true;
  });
  EXPECT_NE(load_error(dir.path()).find("integer dtype"), std::string::npos);
}

TEST(LoadErrors, TruncatedWeights) {
  TempDir dir;
  copy_model(dir.path(), [](const std::string&, Tensor&) { return true; });
  fs::resize_file(dir.file("model.safetensors"),
                  fs::file_size(dir.file("model.safetensors")) - 100);
  const std::string err = load_error(dir.path());
  EXPECT_EQ(err.rfind(dir.file("model.safetensors") + ": ", 0), 0u) << err;
}

TEST(LoadErrors, HalfPrecisionCheckpointsConvert) {
  TempDir dir;
  copy_model(dir.path(), [](const std::string&, Tensor& t) {
    t = t.to(DType::f16);
    return true;
  });
  ModelOptions o;
  o.dtype = DType::f32;
  const CausalLM m = CausalLM::from_pretrained(dir.path(), o);
  EXPECT_EQ(m.dtype(), DType::f32);
  Batch b;
  b.input_ids = {{1, 2, 3}};
  EXPECT_EQ(m.logits(b).shape(), (Shape{1, 3, 1000}));
}

TEST(LoadErrors, BadDevicesAndOptions) {
  const std::string model = test::model_dir("qwen3-tiny");
  ModelOptions o;
  o.device_map = "gpu";
  EXPECT_NE(load_error(model, o).find("Expected one of cpu, cuda"), std::string::npos);
  o.device_map = "cuda:01";
  EXPECT_EQ(load_error(model, o), "Invalid device string: 'cuda:01'");
  o.device_map = "cpu:1";
  EXPECT_NE(load_error(model, o).find("one cpu device"), std::string::npos);
  o.device_map = "hpu";
  EXPECT_NE(load_error(model, o).find("device 'hpu' is not available"), std::string::npos);
  o.device_map = "cpu";
  o.attn_implementation = "flash_attention_2";
  EXPECT_NE(load_error(model, o).find("'flash_attention_2' is not supported"), std::string::npos);
}

TEST(ModelPath, HubIdsResolveThroughTheCache) {
  TempDir cache;
  const fs::path repo = fs::path(cache.path()) / "models--tiny-org--qwen3-tiny";
  fs::create_directories(repo / "snapshots" / "abc123");
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << "abc123";
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) {
    fs::copy_file(test::model_dir("qwen3-tiny") + "/" + f, repo / "snapshots" / "abc123" / f);
  }
  const char* old = std::getenv("HF_HUB_CACHE");
  const std::string saved = old ? old : "";
  ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  const CausalLM m = CausalLM::from_pretrained("tiny-org/qwen3-tiny");
  EXPECT_EQ(m.config().architecture, "Qwen3ForCausalLM");
  const std::string err = load_error("tiny-org/absent");
  EXPECT_NE(err.find("not in the Hugging Face cache"), std::string::npos) << err;
  if (old) {
    ::setenv("HF_HUB_CACHE", saved.c_str(), 1);
  } else {
    ::unsetenv("HF_HUB_CACHE");
  }
}

}  // namespace
}  // namespace anvil
