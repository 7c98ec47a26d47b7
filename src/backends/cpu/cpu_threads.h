// The CPU kernels' own fork-join: workers spin briefly between jobs instead of sleeping on a
// condition variable, so a decode step's few hundred small ops do not each pay a futex wake-up
// (measured ~10-20 us per op with the general pool, a large share of a 3 ms step). Sized like
// the general pool (anvil::num_threads()); workers sleep after ~0.2 ms without work.
#pragma once

#include <cstdint>
#include <thread>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace anvil::cpu {

/// One step of a spin-wait (the pause instruction where there is one).
inline void spin_pause() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

/// Spins until done() is true, yielding the core now and then (a thread we wait for may be
/// descheduled on it).
template <class Done>
void spin_until(Done done) {
  for (int spins = 1; !done(); ++spins) {
    spin_pause();
    if (spins % 256 == 0) std::this_thread::yield();
  }
}

/// A non-owning reference to a callable void(int64_t task).
class TaskRef {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, TaskRef>>>
  TaskRef(F& f) : obj_(&f), call_([](void* o, int64_t t) { (*static_cast<F*>(o))(t); }) {}
  void operator()(int64_t t) const { call_(obj_, t); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t);
};

/// Threads the CPU kernels run on (including the caller).
int threads();

/// Runs task(0) .. task(n - 1), claimed dynamically by the threads; returns when all are done.
/// Serial when called from inside a task or with one thread.
void run_tasks(int64_t n, TaskRef task);

/// The members a team region runs with: threads(), or 1 from inside a task or team.
int team_size();

/// Runs member(0) .. member(size - 1) at once, each on its own thread (the caller runs member 0),
/// so that members may share phased work (a member may wait for work another has claimed);
/// `size` must be team_size(). Returns when all are done.
void run_team(TaskRef member, int size);

/// fn(begin, end) over [0, n) in at most `threads() * chunks_per_thread` contiguous chunks of at
/// least `grain` items.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn, int chunks_per_thread = 1) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t max_chunks = (n + grain - 1) / grain;
  int64_t chunks = static_cast<int64_t>(threads()) * chunks_per_thread;
  if (chunks > max_chunks) chunks = max_chunks;
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t per = n / chunks, extra = n % chunks;
  auto task = [&](int64_t c) {
    const int64_t b = c * per + (c < extra ? c : extra);
    fn(b, b + per + (c < extra ? 1 : 0));
  };
  run_tasks(chunks, TaskRef(task));
}

}  // namespace anvil::cpu
