/// @file tensor.h
/// A strided n-dimensional view of a device buffer. Views (narrow, select, reshape, transpose)
/// share the buffer; kernels are written for contiguous inner dimensions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "anvil/backend.h"
#include "anvil/device.h"
#include "anvil/dtype.h"

namespace anvil {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  /// Uninitialised tensor on `device`.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu());
  /// Wraps memory owned by someone else (an mmap'd file, say); `owner` keeps it alive.
  static Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device,
                          std::shared_ptr<void> owner);
  /// Copies host values into a new CPU tensor.
  static Tensor from_f32(const std::vector<float>& values, const Shape& shape);
  static Tensor from_i64(const std::vector<int64_t>& values, const Shape& shape);

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  /// Size of dimension `d`; negative counts from the end.
  int64_t size(int64_t d) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return dtype_nbytes(dtype_, numel()); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_contiguous() const;

  void* raw() const { return data_; }
  /// What keeps the memory alive (shared by views of it): identifies the allocation, so a cache
  /// keyed by address can tell a live tensor from a later one at a reused address.
  const std::shared_ptr<void>& owner() const { return owner_; }
  template <class T>
  T* data() const {
    return static_cast<T*>(data_);
  }

  /// Same elements, new shape (one dimension may be -1); requires a contiguous tensor.
  Tensor view(const Shape& shape) const;
  /// Elements [start, start+length) of dimension `d`.
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  /// Index `i` of dimension `d`, which disappears.
  Tensor select(int64_t d, int64_t i) const;
  Tensor transpose(int64_t a, int64_t b) const;

  /// A contiguous copy (or this tensor when already contiguous).
  Tensor contiguous() const;
  /// Converted copy; this tensor when the dtype already matches.
  Tensor to(DType dtype) const;
  /// Copy on another device; this tensor when already there.
  Tensor to(Device device) const;
  /// Copies `src` (same shape, any strides and dtype, any device) into this tensor.
  void copy_from(const Tensor& src);

  /// Host copy as float32 values in row-major order (for tests and the CLI).
  std::vector<float> to_f32_vector() const;
  std::vector<int64_t> to_i64_vector() const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::f32;
  Device device_;

  int64_t norm_dim(int64_t d) const;
};

}  // namespace anvil
