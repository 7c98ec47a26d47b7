// Where weights come from, by Hugging Face name: a safetensors checkpoint, or a GGUF file whose
// names and layouts are mapped onto Hugging Face's. The decoder's loader asks only this.
#pragma once

#include <string>

#include "anvil/safetensors.h"
#include "anvil/tensor.h"

namespace anvil {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool contains(const std::string& name) const = 0;
  virtual Shape shape(const std::string& name) const = 0;
  virtual DType dtype(const std::string& name) const = 0;
  /// The tensor as stored, on the CPU (a view of the mapped file where possible).
  virtual Tensor load(const std::string& name) const = 0;
  /// "FILE: tensor 'NAME'" for messages.
  virtual std::string describe(const std::string& name) const = 0;
};

class SafetensorsSource : public WeightSource {
 public:
  explicit SafetensorsSource(Checkpoint ckpt) : ckpt_(std::move(ckpt)) {}
  bool contains(const std::string& name) const override { return ckpt_.contains(name); }
  Shape shape(const std::string& name) const override { return ckpt_.entry(name).shape; }
  DType dtype(const std::string& name) const override { return ckpt_.entry(name).dtype; }
  Tensor load(const std::string& name) const override { return ckpt_.load(name); }
  std::string describe(const std::string& name) const override {
    return ckpt_.file_of(name) + ": tensor '" + name + "'";
  }

 private:
  Checkpoint ckpt_;
};

}  // namespace anvil
