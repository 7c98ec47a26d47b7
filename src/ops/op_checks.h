// The op front ends' checks: each failure names the op and the argument (ops.cc, moe.cc).
#pragma once

#include <string>

#include "anvil/error.h"
#include "anvil/tensor.h"

namespace anvil::ops {

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw Error(std::string(op) + ": " + what);
}

inline void expect_shape(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape) {
    fail(op, std::string(name) + " has shape " + shape_str(t.shape()) + ", expected " +
                 shape_str(shape));
  }
}

inline void expect_rank(const char* op, const char* name, const Tensor& t, int64_t rank) {
  if (!t.defined()) fail(op, std::string(name) + " is undefined");
  if (t.dim() != rank) {
    fail(op, std::string(name) + " has shape " + shape_str(t.shape()) + ", expected rank " +
                 std::to_string(rank));
  }
}

inline void expect_contiguous(const char* op, const char* name, const Tensor& t) {
  if (!t.is_contiguous()) fail(op, std::string(name) + " must be contiguous");
}

inline void expect_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (b.defined() && !(a.device() == b.device())) {
    fail(op,
         "tensors on different devices (" + a.device().str() + " and " + b.device().str() + ")");
  }
}

inline void expect_dtype(const char* op, const char* name, const Tensor& t, DType d) {
  if (t.dtype() != d) {
    fail(op, std::string(name) + " has dtype " + std::string(dtype_name(t.dtype())) +
                 ", expected " + std::string(dtype_name(d)));
  }
}

// A KV cache holds the activations' dtype or a narrower float one (an f16 cache beside f32
// activations); whether a backend has the pair is the kernel lookup's to say.
inline void expect_cache_dtype(const char* op, const Tensor& cache, DType act) {
  const DType d = cache.dtype();
  if (d != act && d != DType::f16 && d != DType::bf16) {
    fail(op, "cache has dtype " + std::string(dtype_name(d)) + ", expected " +
                 std::string(dtype_name(act)) + " (the activations') or f16 / bf16");
  }
}

}  // namespace anvil::ops
