// Persistent workers woken per parallel_for; chunks are claimed through an atomic counter so
// uneven chunks balance themselves.
#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace anvil {
namespace {

int default_threads() {
  if (const char* env = std::getenv("ANVIL_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t chunks, const std::function<void(int64_t)>& job) {
    std::lock_guard<std::mutex> one_job_at_a_time(run_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      chunks_ = chunks;
      next_.store(0);
      pending_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    drain(job, chunks);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void drain(const std::function<void(int64_t)>& job, int64_t chunks) {
    for (int64_t c; (c = next_.fetch_add(1)) < chunks;) job(c);
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t)>* job;
      int64_t chunks;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
        chunks = chunks_;
      }
      drain(*job, chunks);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

std::mutex g_pool_mu;
std::unique_ptr<Pool> g_pool;
thread_local bool t_inside = false;

Pool& pool() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool) g_pool = std::make_unique<Pool>(default_threads());
  return *g_pool;
}

}  // namespace

int num_threads() {
  return pool().size();
}

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_pool = std::make_unique<Pool>(n > 0 ? n : default_threads());
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Pool& p = pool();
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(max_chunks, static_cast<int64_t>(p.size()) * 4);
  if (chunks <= 1 || p.size() == 1 || t_inside) {
    fn(0, n);
    return;
  }
  const int64_t per = (n + chunks - 1) / chunks;
  const std::function<void(int64_t)> job = [&](int64_t c) {
    const bool was_inside = t_inside;
    t_inside = true;
    const int64_t b = c * per;
    const int64_t e = std::min(n, b + per);
    if (b < e) fn(b, e);
    t_inside = was_inside;
  };
  p.run(chunks, job);
}

}  // namespace anvil
