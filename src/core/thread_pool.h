// A fixed pool of worker threads for data-parallel loops. Sized from ANVIL_NUM_THREADS or the
// number of cores; the calling thread takes part, so a pool of N runs N ways.
#pragma once

#include <cstdint>
#include <functional>

namespace anvil {

/// Runs fn(begin, end) over [0, n) split into contiguous chunks of at least `grain` items.
/// Blocks until all chunks are done. Nested calls run serially on the caller.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/// Threads the pool uses (including the caller).
int num_threads();
/// Resizes the pool; 0 means "the default" (ANVIL_NUM_THREADS, else the core count).
void set_num_threads(int n);

}  // namespace anvil
