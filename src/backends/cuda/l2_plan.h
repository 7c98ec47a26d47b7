// Weights brought into L2 one product ahead during a replayed decode step. A batch-1 product
// moves 2-17 MB, too little to reach HBM bandwidth on its own (its loads start when it starts);
// the step's products run in the same order at every replay, so while one runs, its threads
// prefetch the next product's weights into L2 (60 MB on an H200), keeping HBM streaming across
// kernel boundaries. Recorded while the step is captured (a product records its weights and
// gets the table slot holding the next product's), uploaded when the capture ends.
#pragma once

#include <memory>
#include <vector>

#include "anvil/device.h"

namespace anvil {
class Buffer;
}

namespace anvil::cuda {

/// Up to three weight ranges of one product (q/k/v, gate/up); as read by the kernels.
struct L2Ranges {
  const char* ptr[3];
  long long bytes[3];
};

class L2Plan {
 public:
  explicit L2Plan(Device device);
  /// Records a product's weights; returns the device slot the product's kernel reads the next
  /// product's ranges from (null once the table is full).
  const L2Ranges* add(const void* const* weights, const long long* bytes, int count);
  /// Uploads the table: product i's slot holds product i + 1's ranges, the last product's the
  /// first's (the next step begins with it). Call after the capture.
  void finish();

 private:
  Device device_;
  std::vector<L2Ranges> ranges_;
  std::shared_ptr<Buffer> table_;
};

/// Whether decode graphs carry an L2 plan (ANVIL_CUDA_NO_L2_PLAN=1 turns it off, for measuring).
bool l2_plan_enabled();

}  // namespace anvil::cuda
