#include "backends/cuda/l2_plan.h"

#include <algorithm>
#include <cstdlib>

#include "anvil/backend.h"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"

namespace anvil::cuda {
namespace {

constexpr size_t kMaxProducts = 1024;
// The most a product prefetches for the next: with the running product's own weights this stays
// well inside L2 (the head's 272 MB would only evict what is about to be read).
constexpr long long kMaxPrefetchBytes = 20LL << 20;

}  // namespace

bool l2_plan_enabled() {
  static const bool off = std::getenv("ANVIL_CUDA_NO_L2_PLAN") != nullptr;
  return !off;
}

L2Plan::L2Plan(Device device)
    : device_(device), table_(allocate(device, kMaxProducts * sizeof(L2Ranges))) {}

const L2Ranges* L2Plan::add(const void* const* weights, const long long* bytes, int count) {
  if (ranges_.size() >= kMaxProducts) return nullptr;
  L2Ranges r{};
  long long budget = kMaxPrefetchBytes;
  for (int i = 0; i < count && i < 3; ++i) {
    r.ptr[i] = static_cast<const char*>(weights[i]);
    r.bytes[i] = std::min(bytes[i], budget);
    budget -= r.bytes[i];
  }
  ranges_.push_back(r);
  return static_cast<const L2Ranges*>(table_->data()) + (ranges_.size() - 1);
}

void L2Plan::finish() {
  if (ranges_.empty()) return;
  std::vector<L2Ranges> next(ranges_.size());
  for (size_t i = 0; i < ranges_.size(); ++i) next[i] = ranges_[(i + 1) % ranges_.size()];
  const Context& ctx = context(device_);
  ANVIL_CUDA_CHECK(cudaMemcpyAsync(table_->data(), next.data(), next.size() * sizeof(L2Ranges),
                                   cudaMemcpyHostToDevice, ctx.stream));
  ANVIL_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
}

}  // namespace anvil::cuda
