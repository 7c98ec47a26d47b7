// A CUPTI injection library that writes the device's timeline: every kernel, copy and memset
// with its start and end on the GPU's clock, for finding the gaps between a decode step's
// kernels (the GPU machine has no Nsight Systems). Loaded by the CUDA driver itself:
//
//   CUDA_INJECTION64_PATH=libanvil_cuda_timeline.so ANVIL_TIMELINE_OUT=t.txt anvil bench ...
//
// One line per record: "K start_ns end_ns stream name", "M start_ns end_ns stream kind bytes"
// (kind: CUPTI's copy kind, 1 host to device, 2 device to host, 8 device to device), "S start_ns
// end_ns stream bytes". bench/cuda_timeline_summary.py turns them into a step's median
// timeline.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

constexpr size_t kBufferBytes = 8u << 20;
std::FILE* out = nullptr;
std::mutex out_mutex;

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "cuda_timeline: %s failed: %s\n", what, msg ? msg : "unknown error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void write_record(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      std::fprintf(out, "K %llu %llu %u %s\n", static_cast<unsigned long long>(k->start),
                   static_cast<unsigned long long>(k->end), k->streamId, k->name);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      std::fprintf(out, "M %llu %llu %u %u %llu\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId, m->copyKind,
                   static_cast<unsigned long long>(m->bytes));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      std::fprintf(out, "S %llu %llu %u %llu\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId,
                   static_cast<unsigned long long>(m->bytes));
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(out_mutex);
    CUpti_Activity* record = nullptr;
    while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      write_record(record);
    }
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(out_mutex);
  if (out) std::fclose(out);
  out = nullptr;
}

}  // namespace

// The CUDA driver calls this once, when it initialises, in a process started with
// CUDA_INJECTION64_PATH naming this library.
extern "C" int InitializeInjection(void) {
  const char* path = std::getenv("ANVIL_TIMELINE_OUT");
  out = std::fopen(path ? path : "cuda-timeline.txt", "w");
  if (!out) {
    std::fprintf(stderr, "cuda_timeline: cannot write %s\n", path ? path : "cuda-timeline.txt");
    return 0;
  }
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "kernels");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "copies");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "memsets");
  std::atexit(flush_at_exit);
  return 1;
}
