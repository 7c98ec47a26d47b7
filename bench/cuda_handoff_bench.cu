// What a hand-off between the one-launch decode kernel's phases costs with no work around it:
// the floor under a layer's chain of five (docs/perf.md, fifty-third session, issue 6).
//
// A persistent grid of one 512-thread block per SM (as decode_layers.cu) runs a chain of
// hand-offs. In each, every block publishes its share of a vector and then every block takes
// the whole vector and reduces it (a sum, as a staging's RMSNorm does), and what a block
// publishes next depends on that sum, so no hand-off can start before the one before it has
// ended everywhere. Two ways, as the kernel has them:
//   flags    each value pair goes out as a 64-bit word with a 32-bit flag (mailbox.cuh), the
//            readers poll the words;
//   barrier  plain stores, a grid barrier (one growing counter), then plain reads.
// Also the bare round trip (one block writes a flagged word, another answers, and so on), and
// variants that say where a hand-off's time goes: without the block's sum, each word written
// in several copies (so that readers spread over more L2 lines), smaller grids, and two ways of
// seeing a word sooner after it lands: passes of polls kept in flight a few hundred cycles
// apart, or groups of threads polling the same words with their passes that far apart.
// Prints nanoseconds per hand-off, from CUDA events over 20,000 hand-offs in one launch (the
// best of three launches).
//
//   anvil_cuda_handoff_bench [hidden=896] [inter=4864] [qkv=1152]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/mailbox.cuh"

namespace {

using anvil::cuda::MailWord;

constexpr int kThreads = 512;
constexpr int kMaxWordsPerThread = 8;  // vectors up to 8 x 512 words (8,192 values)
constexpr int kMaxSizes = 8;
constexpr int kMaxCopies = 8;

struct Params {
  MailWord* mail;             // two buffers of kMaxCopies x max_words words (flags)
  unsigned* plain;            // two buffers of max_words words (barrier)
  unsigned long long* count;  // the grid barrier's counter
  unsigned long long* sink;   // one word per block: keeps the sums alive
  int max_words;
  int sizes[kMaxSizes];  // words per hand-off, cycled
  int nsizes;
  int handoffs;
  int copies;   // flags: each word written to this many places, block b reading copy b % copies
  int reduce;   // 1: the block sums what it took (as a staging's RMSNorm); 0: one block barrier
  int stagger;  // flags: polling passes kept in flight at once (1: one pass after another)
  int gap;      // clock cycles between two of those passes' loads (or groups' first passes)
  int groups;   // flags: groups of threads polling the same words, each gap cycles later
};

__device__ __forceinline__ void spin(int cycles) {
  const long long t = clock64();
  while (clock64() - t < cycles) {
  }
}

// mail_take with K passes of loads in flight, `gap` cycles apart: a word that lands just after
// one pass read it is seen by the next about gap cycles later instead of a round trip later.
template <int N, int K>
__device__ void mail_take_staggered(const MailWord* words, int first, int stride, int count,
                                    unsigned flag, int gap, unsigned (&data)[N]) {
  using anvil::cuda::mail_has;
  using anvil::cuda::mail_load;
  MailWord w[K][N];
  bool done[N];
#pragma unroll
  for (int i = 0; i < N; ++i) done[i] = first + i * stride >= count;
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int i = 0; i < N; ++i) w[k][i] = done[i] ? 0 : mail_load(words + first + i * stride);
    if (k + 1 < K) spin(gap);
  }
  for (;;) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      bool all = true;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        if (!done[i] && mail_has(w[k][i], flag)) {
          done[i] = true;
          data[i] = static_cast<unsigned>(w[k][i]);
        }
        all = all && done[i];
      }
      if (all) return;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        if (!done[i]) w[k][i] = mail_load(words + first + i * stride);
      }
      spin(gap);
    }
  }
}

// The words polled by `groups` groups of the block's threads at once, group g starting g * gap
// cycles after the first, so that a word landing just after one group's pass is seen by the
// next group's instead of a round trip later: no register beyond mail_take's per thread (the
// stagings leave most threads idle at the hidden size). A word found goes to box[] and its
// flag to seen[] (shared memory), and the other groups stop polling it.
template <int N>
__device__ void take_grouped(const MailWord* words, int n, unsigned flag, int groups, int gap,
                             unsigned* box, volatile unsigned* seen) {
  using anvil::cuda::mail_has;
  using anvil::cuda::mail_load;
  const int per = kThreads / groups, g = static_cast<int>(threadIdx.x) / per;
  const int first = static_cast<int>(threadIdx.x) % per;
  spin(g * gap);
  MailWord w[N];
  bool done[N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    done[i] = first + i * per >= n;
    w[i] = done[i] ? 0 : mail_load(words + first + i * per);
  }
  for (;;) {
    bool all = true;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (done[i]) continue;
      const int at = first + i * per;
      if (mail_has(w[i], flag)) {
        box[at] = static_cast<unsigned>(w[i]);
        seen[at] = flag;
        done[i] = true;
      } else if (seen[at] == flag) {
        done[i] = true;
      } else {
        all = false;
      }
    }
    if (all) return;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (!done[i]) w[i] = mail_load(words + first + i * per);
    }
  }
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float r = 0.0f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) r += scratch[w];
  __syncthreads();
  return r;
}

// This block's words of a vector of n words: an even share of the grid.
__device__ __forceinline__ void share(int n, int& begin, int& end) {
  begin = static_cast<int>(static_cast<long long>(n) * blockIdx.x / gridDim.x);
  end = static_cast<int>(static_cast<long long>(n) * (blockIdx.x + 1) / gridDim.x);
}

template <bool kFlags>
__global__ void __launch_bounds__(kThreads, 1) handoff_chain(const __grid_constant__ Params p) {
  __shared__ float scratch[kThreads / 32];
  __shared__ unsigned box[kMaxWordsPerThread * kThreads];
  __shared__ unsigned seen[kMaxWordsPerThread * kThreads];
  if (p.groups > 1) {
    for (int i = static_cast<int>(threadIdx.x); i < kMaxWordsPerThread * kThreads; i += kThreads)
      seen[i] = 0;
    __syncthreads();
  }
  float acc = static_cast<float>(blockIdx.x);
  for (int h = 0; h < p.handoffs; ++h) {
    const int n = p.sizes[h % p.nsizes];
    const int buffer = h & 1;  // a buffer is rewritten two hand-offs after its readers
    MailWord* const mail = p.mail + static_cast<long long>(buffer) * p.copies * p.max_words;
    const unsigned flag = static_cast<unsigned>(h) + 1u;
    int begin, end;
    share(n, begin, end);
    const unsigned payload = __float_as_uint(acc) & 0xffff0000u;  // depends on the last sum
    for (int w = begin + static_cast<int>(threadIdx.x); w < end; w += kThreads) {
      if (kFlags) {
        for (int c = 0; c < p.copies; ++c) {
          anvil::cuda::mail_put(mail + c * p.max_words + w, flag, payload | (w & 0xffff));
        }
      } else {
        p.plain[buffer * p.max_words + w] = payload | (w & 0xffff);
      }
    }
    if (!kFlags) {
      __threadfence();
      anvil::cuda::grid_barrier(p.count, gridDim.x, kThreads);
    }
    float s = 0.0f;
    if (kFlags) {
      unsigned data[kMaxWordsPerThread];
      const MailWord* from = mail + (blockIdx.x % p.copies) * p.max_words;
      const int t = static_cast<int>(threadIdx.x);
      if (p.groups > 1) {
        take_grouped<kMaxWordsPerThread>(from, n, flag, p.groups, p.gap, box, seen);
        __syncthreads();
        for (int i = 0; i < kMaxWordsPerThread; ++i) {
          const int at = t + i * kThreads;
          data[i] = at < n ? box[at] : 0u;
        }
      } else if (p.stagger == 2) {
        mail_take_staggered<kMaxWordsPerThread, 2>(from, t, kThreads, n, flag, p.gap, data);
      } else if (p.stagger == 3) {
        mail_take_staggered<kMaxWordsPerThread, 3>(from, t, kThreads, n, flag, p.gap, data);
      } else if (p.stagger == 4) {
        mail_take_staggered<kMaxWordsPerThread, 4>(from, t, kThreads, n, flag, p.gap, data);
      } else {
        anvil::cuda::mail_take<kMaxWordsPerThread>(from, t, kThreads, n, flag, 0, data);
      }
#pragma unroll
      for (int i = 0; i < kMaxWordsPerThread; ++i) {
        if (static_cast<int>(threadIdx.x) + i * kThreads < n)
          s += __uint_as_float(data[i] & 0xffff0000u);
      }
    } else {
      for (int w = static_cast<int>(threadIdx.x); w < n; w += kThreads) {
        s += __uint_as_float(__ldcg(p.plain + buffer * p.max_words + w) & 0xffff0000u);
      }
    }
    if (p.reduce) {
      acc = block_sum(s * 1e-6f, scratch) + 1.0f;
    } else {
      acc = __syncthreads_count(s > 0.0f) + 1.0f;  // the block's threads have all taken theirs
    }
  }
  if (threadIdx.x == 0) p.sink[blockIdx.x] = __float_as_uint(acc);
}

// The bare round trip: block 0 and block gridDim.x - 1 take turns, each waiting for the other's
// flagged word before writing its own (the other blocks return).
__global__ void ping_pong(MailWord* mail, int rounds) {
  const bool first = blockIdx.x == 0, last = blockIdx.x == gridDim.x - 1;
  if (threadIdx.x != 0 || !(first || last)) return;
  for (int r = 0; r < rounds; ++r) {
    const unsigned flag = static_cast<unsigned>(r) + 1u;
    if (first) {
      anvil::cuda::mail_put(mail, flag, 0);
      while (!anvil::cuda::mail_has(anvil::cuda::mail_load(mail + 16), flag)) {
      }
    } else {
      while (!anvil::cuda::mail_has(anvil::cuda::mail_load(mail), flag)) {
      }
      anvil::cuda::mail_put(mail + 16, flag, 0);
    }
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "anvil_cuda_handoff_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Run {
  Params p;
  int sms;
};

struct Chain {
  std::vector<int> sizes;  // words per hand-off, cycled
  bool flags = true;
  int blocks = 0;  // 0: one per SM
  int copies = 1;
  bool reduce = true;
  int stagger = 1;
  int gap = 0;
  int groups = 1;
};

// Nanoseconds per hand-off of a chain; the best of three launches of 20,000 hand-offs.
float time_chain(const Run& run, const Chain& chain) {
  Params p = run.p;
  p.nsizes = static_cast<int>(chain.sizes.size());
  for (int i = 0; i < p.nsizes; ++i) p.sizes[i] = chain.sizes[i];
  p.handoffs = 20000;
  p.copies = chain.copies;
  p.reduce = chain.reduce ? 1 : 0;
  p.stagger = chain.stagger;
  p.gap = chain.gap;
  p.groups = chain.groups;
  const int blocks = chain.blocks ? chain.blocks : run.sms;
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  float best = 1e30f;
  for (int rep = 0; rep < 3; ++rep) {
    // Fresh mailboxes (every launch's flags start at 1 again) and barrier count (it numbers
    // barriers by its quotient by the grid size, which changes between chains).
    check(cudaMemset(p.mail, 0, 2ull * kMaxCopies * p.max_words * sizeof(MailWord)), "memset");
    check(cudaMemset(p.count, 0, sizeof(unsigned long long)), "memset");
    void* args[] = {&p};
    const void* kernel = chain.flags ? reinterpret_cast<const void*>(&handoff_chain<true>)
                                     : reinterpret_cast<const void*>(&handoff_chain<false>);
    check(cudaEventRecord(a), "record");
    check(cudaLaunchCooperativeKernel(kernel, blocks, kThreads, args, 0, nullptr), "launch");
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    best = std::min(best, ms * 1e6f / static_cast<float>(p.handoffs));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int hidden = argc > 1 ? std::atoi(argv[1]) : 896;
  const int inter = argc > 2 ? std::atoi(argv[2]) : 4864;
  const int qkv = argc > 3 ? std::atoi(argv[3]) : 1152;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  Run run{};
  run.sms = prop.multiProcessorCount;
  run.p.max_words = kMaxWordsPerThread * kThreads;
  if (hidden / 2 > run.p.max_words || inter / 2 > run.p.max_words || qkv / 2 > run.p.max_words) {
    std::fprintf(stderr, "anvil_cuda_handoff_bench: vectors of at most %d values\n",
                 2 * run.p.max_words);
    return 2;
  }
  check(cudaMalloc(&run.p.mail, 2ull * kMaxCopies * run.p.max_words * sizeof(MailWord)), "malloc");
  check(cudaMalloc(&run.p.plain, 2ull * run.p.max_words * sizeof(unsigned)), "malloc");
  check(cudaMalloc(&run.p.count, sizeof(unsigned long long)), "malloc");
  check(cudaMalloc(&run.p.sink, run.sms * sizeof(unsigned long long)), "malloc");
  std::printf("%s, %d SMs, %d threads a block; hidden %d, intermediate %d, q/k/v %d values\n",
              prop.name, run.sms, kThreads, hidden, inter, qkv);

  {  // the bare round trip
    MailWord* mail = run.p.mail;
    const int rounds = 20000;
    check(cudaMemset(mail, 0, 64 * sizeof(MailWord)), "memset");
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "event");
    check(cudaEventCreate(&b), "event");
    check(cudaEventRecord(a), "record");
    ping_pong<<<run.sms, 32>>>(mail, rounds);
    check(cudaGetLastError(), "ping_pong");
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    std::printf("round trip between two SMs (one flagged word each way): %.0f ns\n",
                ms * 1e6f / rounds);
  }

  const int x = hidden / 2, act = inter / 2, q = qkv / 2;
  const std::vector<int> layer = {q, x, x, x, act};
  std::printf("ns a hand-off (every block publishes its share, every block takes the whole)\n");
  const auto row = [&](const char* name, const Chain& c) {
    std::printf("  %-58s %6.0f\n", name, time_chain(run, c));
  };
  char name[96];
  std::snprintf(name, sizeof name, "flags, hidden (%d words)", x);
  row(name, {{x}});
  std::snprintf(name, sizeof name, "flags, intermediate (%d words)", act);
  row(name, {{act}});
  std::snprintf(name, sizeof name, "flags, q/k/v (%d words)", q);
  row(name, {{q}});
  row("flags, a layer's five in turn", {layer});
  row("barrier, a layer's five in turn", {layer, false});
  row("flags, a layer's five, no block sum", {layer, true, 0, 1, false});
  for (int copies : {2, 4, 8}) {
    std::snprintf(name, sizeof name, "flags, a layer's five, %d copies of each word", copies);
    row(name, {layer, true, 0, copies});
  }
  for (int blocks : {66, 33, 16, 8, 2}) {
    std::snprintf(name, sizeof name, "flags, a layer's five, %d blocks", blocks);
    row(name, {layer, true, blocks});
  }
  for (const auto& [k, gap] : std::vector<std::pair<int, int>>{
           {2, 300}, {2, 650}, {3, 200}, {3, 430}, {4, 150}, {4, 330}}) {
    std::snprintf(name, sizeof name, "flags, a layer's five, %d passes in flight %d cycles apart",
                  k, gap);
    row(name, {layer, true, 0, 1, true, k, gap});
    std::snprintf(name, sizeof name, "  the same without the block sum");
    row(name, {layer, true, 0, 1, false, k, gap});
  }
  // Redundant pollers: only where a group's threads hold the vector (kMaxWordsPerThread each).
  for (const auto& [words, what] :
       std::vector<std::pair<int, const char*>>{{x, "hidden"}, {q, "q/k/v"}}) {
    std::snprintf(name, sizeof name, "flags, %s alone", what);
    row(name, {{words}});
    for (const auto& [g, gap] :
         std::vector<std::pair<int, int>>{{2, 0}, {2, 650}, {4, 0}, {4, 330}, {4, 500}, {8, 165}}) {
      if (words > kThreads / g * kMaxWordsPerThread) continue;
      std::snprintf(name, sizeof name, "  %d groups polling the same words, %d cycles apart", g,
                    gap);
      row(name, {{words}, true, 0, 1, true, 1, gap, g});
    }
  }
  for (int blocks : {16, 2}) {
    std::snprintf(name, sizeof name, "flags, a layer's five, %d blocks, no block sum", blocks);
    row(name, {layer, true, blocks, 1, false});
  }
  cudaFree(run.p.mail);
  cudaFree(run.p.plain);
  cudaFree(run.p.count);
  cudaFree(run.p.sink);
  return 0;
}
