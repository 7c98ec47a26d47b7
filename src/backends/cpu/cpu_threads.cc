// Persistent workers that spin on a generation counter, then sleep (std::atomic::wait, a futex)
// when no job arrived for a while. Tasks are claimed from one 64-bit word holding the job's
// generation, task count and next index, so a worker that wakes late (descheduled: the machine
// may be busier than its cores) can never claim a task of another job, and the caller never
// waits for a worker that has not started: it runs every unclaimed task itself and then waits
// only for tasks already running elsewhere.
#include "backends/cpu/cpu_threads.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace anvil::cpu {
namespace {

thread_local bool t_inside = false;

// The claim word: generation (16 bits) | task count (24 bits) | next index (24 bits).
constexpr int kIndexBits = 24;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr int64_t kMaxTasks = int64_t{1} << kIndexBits;

class SpinPool {
 public:
  explicit SpinPool(int n) : size_(n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~SpinPool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return size_; }

  // Every pool thread runs one member at once: the caller member 0, the workers the others
  // (claims start at 1; a worker stays inside its member until the last barrier, so no worker
  // can take two). Returns when all members are done.
  void run_team(TaskRef member) {
    std::lock_guard<std::mutex> one_job_at_a_time(run_mu_);
    task_ = &member;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = (++job_) & 0xffff;
    claim_.store((gen << (2 * kIndexBits)) | (static_cast<uint64_t>(size_) << kIndexBits) | 1,
                 std::memory_order_release);
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();
    const bool was_inside = t_inside;
    t_inside = true;
    member(0);
    t_inside = was_inside;
    int spins = 0;
    while (done_.load(std::memory_order_acquire) != size_ - 1) {
      spin_pause();
      if (++spins % 1024 == 0) std::this_thread::yield();
    }
  }

  void run(int64_t n, TaskRef task) {
    std::lock_guard<std::mutex> one_job_at_a_time(run_mu_);
    task_ = &task;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = (++job_) & 0xffff;
    claim_.store((gen << (2 * kIndexBits)) | (static_cast<uint64_t>(n) << kIndexBits),
                 std::memory_order_release);
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();
    drain();
    int spins = 0;
    while (done_.load(std::memory_order_acquire) != n) {
      spin_pause();
      // A worker holding a task may have been descheduled: let it run.
      if (++spins % 1024 == 0) std::this_thread::yield();
    }
  }

 private:
  // Runs tasks of the current job until none is left.
  void drain() {
    const bool was_inside = t_inside;
    t_inside = true;
    uint64_t v = claim_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t count = (v >> kIndexBits) & kIndexMask, index = v & kIndexMask;
      if (index >= count) break;
      if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
      (*task_)(static_cast<int64_t>(index));
      done_.fetch_add(1, std::memory_order_release);
      v = claim_.load(std::memory_order_acquire);
    }
    t_inside = was_inside;
  }
  void work() {
    uint32_t seen = 0;  // the generation at construction, not at thread start
    for (;;) {
      uint32_t g;
      const auto start = std::chrono::steady_clock::now();
      int spins = 0;
      // Spin ~0.2 ms (a decode step issues ops microseconds apart), then sleep.
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
        spin_pause();
        if (++spins % 256 == 0 &&
            std::chrono::steady_clock::now() - start > std::chrono::microseconds(200)) {
          sleepers_.fetch_add(1);
          while ((g = generation_.load()) == seen) generation_.wait(seen);
          sleepers_.fetch_sub(1);
          break;
        }
      }
      seen = g;
      if (stop_.load()) return;
      drain();
    }
  }

  const int size_;
  std::mutex run_mu_;
  std::vector<std::thread> workers_;
  std::atomic<uint32_t> generation_{0};  // 32 bits: a plain futex word
  std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> stop_{false};
  const TaskRef* task_ = nullptr;
  uint64_t job_ = 0;
};

std::mutex g_mu;
std::unique_ptr<SpinPool> g_pool;

SpinPool& pool() {
  const int want = anvil::num_threads();
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_pool || g_pool->size() != want) {
    g_pool.reset();
    g_pool = std::make_unique<SpinPool>(want);
  }
  return *g_pool;
}

}  // namespace

int threads() {
  return anvil::num_threads();
}

void run_tasks(int64_t n, TaskRef task) {
  if (n <= 0) return;
  if (n == 1 || t_inside || n >= kMaxTasks) {
    for (int64_t t = 0; t < n; ++t) task(t);
    return;
  }
  SpinPool& p = pool();
  if (p.size() == 1) {
    for (int64_t t = 0; t < n; ++t) task(t);
    return;
  }
  p.run(n, task);
}

int team_size() {
  return t_inside ? 1 : pool().size();
}

void run_team(TaskRef member, int size) {
  if (size <= 1) {
    member(0);
    return;
  }
  pool().run_team(member);
}

}  // namespace anvil::cpu
