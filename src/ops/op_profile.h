// ANVIL_OP_PROFILE=1: the wall time of each op call, summed per op and shapes and printed at exit
// (largest first). Meaningful for backends whose ops return when done (the CPU); a queueing
// backend's figures are the time to queue. An op that runs as composed ops counts their time
// under its own name too (linear_swiglu's includes its two linear calls). Off, a timer costs
// one branch.
#pragma once

#include <chrono>
#include <string>

namespace anvil::ops {

bool op_profiling();
void record_op_time(const std::string& name, double ms);

/// Times the enclosing scope as `name()` (called only while profiling).
class OpTimer {
 public:
  template <class Name>
  explicit OpTimer(Name&& name) {
    if (!op_profiling()) return;
    name_ = name();
    start_ = std::chrono::steady_clock::now();
    on_ = true;
  }
  ~OpTimer() {
    if (on_) {
      record_op_time(name_, std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - start_)
                                .count());
    }
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  bool on_ = false;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace anvil::ops
