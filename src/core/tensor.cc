// Tensor: shape/stride bookkeeping, views, and copies between dtypes and devices.
#include "anvil/tensor.h"

#include <cstring>

#include "anvil/error.h"

namespace anvil {
namespace {

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// Calls fn(element offset) for every element of a strided layout, in row-major order.
template <class Fn>
void for_each_offset(const Shape& shape, const Shape& strides, Fn&& fn) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t count = 0; count < n; ++count) {
    fn(count, off);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) {
    if (d < 0) throw Error("tensor shape " + shape_str(shape) + " has a negative dimension");
  }
  if (is_quantized(dtype) && (shape.empty() || shape.back() % dtype_block_elems(dtype) != 0)) {
    throw Error("a " + std::string(dtype_name(dtype)) + " tensor needs rows of a multiple of " +
                std::to_string(dtype_block_elems(dtype)) + " values, got shape " +
                shape_str(shape));
  }
  Tensor t;
  const size_t bytes = dtype_nbytes(dtype, shape_numel(shape));
  auto buffer = backend_for(device).allocate(device, bytes == 0 ? 1 : bytes);
  t.data_ = buffer->data();
  t.owner_ = std::move(buffer);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.type == DeviceType::cpu) {
    std::memset(t.data_, 0, t.nbytes());
  } else {
    std::vector<char> zero(t.nbytes(), 0);
    backend_for(device).copy_from_host(t.data_, zero.data(), zero.size(), device);
  }
  return t;
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, Device device,
                         std::shared_ptr<void> owner) {
  Tensor t;
  t.data_ = data;
  t.owner_ = std::move(owner);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::from_f32(const std::vector<float>& values, const Shape& shape) {
  if (shape_numel(shape) != static_cast<int64_t>(values.size())) {
    throw Error("from_f32: " + std::to_string(values.size()) + " values for shape " +
                shape_str(shape));
  }
  Tensor t = empty(shape, DType::f32);
  // An empty vector's data() may be null, which memcpy must not see even for 0 bytes.
  if (!values.empty()) std::memcpy(t.data_, values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& values, const Shape& shape) {
  if (shape_numel(shape) != static_cast<int64_t>(values.size())) {
    throw Error("from_i64: " + std::to_string(values.size()) + " values for shape " +
                shape_str(shape));
  }
  Tensor t = empty(shape, DType::i64);
  if (!values.empty()) std::memcpy(t.data_, values.data(), values.size() * sizeof(int64_t));
  return t;
}

int64_t Tensor::norm_dim(int64_t d) const {
  const int64_t nd = dim();
  if (d < -nd || d >= nd) {
    throw Error("dimension " + std::to_string(d) + " out of range for tensor of shape " +
                shape_str(shape_));
  }
  return d < 0 ? d + nd : d;
}

int64_t Tensor::size(int64_t d) const {
  return shape_[norm_dim(d)];
}

bool Tensor::is_contiguous() const {
  // As in PyTorch, the stride of a dimension of size 1 does not matter.
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::view(const Shape& shape) const {
  if (!is_contiguous()) throw Error("view of a non-contiguous tensor " + shape_str(shape_));
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw Error("view: only one dimension may be -1");
      infer = static_cast<int>(i);
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) out[infer] = known == 0 ? 0 : numel() / known;
  if (shape_numel(out) != numel()) {
    throw Error("view: shape " + shape_str(shape) + " is invalid for " + std::to_string(numel()) +
                " elements");
  }
  Tensor t = *this;
  t.shape_ = out;
  t.strides_ = contiguous_strides(out);
  return t;
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = norm_dim(d);
  if (start < 0 || length < 0 || start + length > shape_[d]) {
    throw Error("narrow: range [" + std::to_string(start) + ", " + std::to_string(start + length) +
                ") out of bounds for dimension " + std::to_string(d) + " of size " +
                std::to_string(shape_[d]));
  }
  const int64_t skipped = start * strides_[d];
  if (is_quantized(dtype_) && skipped % dtype_block_elems(dtype_) != 0) {
    throw Error("narrow: a " + std::string(dtype_name(dtype_)) +
                " tensor can only be cut at block boundaries");
  }
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + dtype_nbytes(dtype_, skipped);
  t.shape_[d] = length;
  return t;
}

Tensor Tensor::select(int64_t d, int64_t i) const {
  d = norm_dim(d);
  Tensor t = narrow(d, i, 1);
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = norm_dim(a);
  b = norm_dim(b);
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor t = empty(shape_, dtype, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_) {
    throw Error("copy: shape " + shape_str(src.shape_) + " into " + shape_str(shape_));
  }
  if (numel() == 0) return;
  const bool same_layout = src.dtype_ == dtype_ && src.is_contiguous() && is_contiguous();
  if (device_.type != DeviceType::cpu || src.device_.type != DeviceType::cpu) {
    // Across devices we move contiguous bytes of one dtype; anything else goes through the host.
    if (same_layout) {
      if (src.device_.type == DeviceType::cpu) {
        backend_for(device_).copy_from_host(data_, src.data_, nbytes(), device_);
      } else if (device_.type == DeviceType::cpu) {
        backend_for(src.device_).copy_to_host(data_, src.data_, nbytes(), src.device_);
      } else if (src.device_ == device_) {
        backend_for(device_).copy_on_device(data_, src.data_, nbytes(), device_);
      } else {
        copy_from(src.to(Device::cpu()));
      }
      return;
    }
    Tensor host_src =
        src.device_.type == DeviceType::cpu ? src : src.contiguous().to(Device::cpu());
    Tensor host_dst = empty(shape_, dtype_, Device::cpu());
    host_dst.copy_from(host_src);
    copy_from(host_dst);
    return;
  }
  if (same_layout) {
    std::memcpy(data_, src.data_, nbytes());
    return;
  }
  if (is_quantized(dtype_) || is_quantized(src.dtype_)) {
    if (is_quantized(dtype_)) {
      throw Error("copy: quantizing to " + std::string(dtype_name(dtype_)) + " is not supported");
    }
    if (!src.is_contiguous()) throw Error("copy: a quantized source must be contiguous");
    // Dequantize, then convert to the destination type.
    std::vector<float> values(static_cast<size_t>(numel()));
    convert_to_f32(src.data_, src.dtype_, values.data(), values.size());
    copy_from(Tensor::from_f32(values, shape_));
    return;
  }
  // Host strided copy with conversion through float32 (exact for every integer this
  // project stores in float tensors) or a raw element copy when dtypes match.
  const size_t esize = dtype_size(dtype_);
  std::vector<int64_t> dst_offsets;
  dst_offsets.reserve(static_cast<size_t>(numel()));
  for_each_offset(shape_, strides_, [&](int64_t, int64_t off) { dst_offsets.push_back(off); });
  auto* dst_bytes = static_cast<char*>(data_);
  const auto* src_bytes = static_cast<const char*>(src.data_);
  const size_t src_esize = dtype_size(src.dtype_);
  if (src.dtype_ == dtype_) {
    for_each_offset(src.shape_, src.strides_, [&](int64_t i, int64_t off) {
      std::memcpy(dst_bytes + dst_offsets[i] * esize, src_bytes + off * src_esize, esize);
    });
    return;
  }
  const bool int_src = src.dtype_ == DType::i64 || src.dtype_ == DType::i32;
  if (dtype_ == DType::i64 || dtype_ == DType::i32) {
    for_each_offset(src.shape_, src.strides_, [&](int64_t i, int64_t off) {
      int64_t v;
      if (int_src) {  // integers stay exact, whatever their size
        v = src.dtype_ == DType::i64 ? *reinterpret_cast<const int64_t*>(src_bytes + off * 8)
                                     : *reinterpret_cast<const int32_t*>(src_bytes + off * 4);
      } else {
        float f;
        convert_to_f32(src_bytes + off * src_esize, src.dtype_, &f, 1);
        v = static_cast<int64_t>(f);
      }
      if (dtype_ == DType::i64) {
        *reinterpret_cast<int64_t*>(dst_bytes + dst_offsets[i] * 8) = v;
      } else {
        *reinterpret_cast<int32_t*>(dst_bytes + dst_offsets[i] * 4) = static_cast<int32_t>(v);
      }
    });
    return;
  }
  for_each_offset(src.shape_, src.strides_, [&](int64_t i, int64_t off) {
    float v;
    convert_to_f32(src_bytes + off * src_esize, src.dtype_, &v, 1);
    convert_from_f32(&v, dst_bytes + dst_offsets[i] * esize, dtype_, 1);
  });
}

std::vector<float> Tensor::to_f32_vector() const {
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<float> out(static_cast<size_t>(numel()));
  convert_to_f32(host.data_, host.dtype_, out.data(), out.size());
  return out;
}

std::vector<int64_t> Tensor::to_i64_vector() const {
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  if (host.dtype_ == DType::i64) {
    std::memcpy(out.data(), host.data_, out.size() * 8);
  } else if (host.dtype_ == DType::i32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = host.data<int32_t>()[i];
  } else {
    throw Error("to_i64_vector: tensor has dtype " + std::string(dtype_name(host.dtype_)));
  }
  return out;
}

}  // namespace anvil
