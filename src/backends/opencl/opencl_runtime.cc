// OpenCL devices, queues, programs and stand-in addressed memory.
#include "backends/opencl/opencl_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "anvil/error.h"
#include "backends/opencl/opencl_sources.h"
#include "backends/opencl/profile.h"
#include "backends/opencl/range_allocator.h"

namespace anvil::opencl {

[[noreturn]] void fail(cl_int err, const char* what) {
  throw Error(std::string("OpenCL error ") + std::to_string(err) + " in " + what);
}

namespace {

constexpr cl_uint kIntelVendorId = 0x8086;
constexpr cl_uint kNvidiaVendorId = 0x10de;

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// cl_khr_pci_bus_info (not in every header yet): query 0x410F returns four cl_uint.
constexpr cl_device_info kPciBusInfo = 0x410F;

std::string pci_address(cl_device_id d, const std::string& extensions) {
  if (extensions.find("cl_khr_pci_bus_info") == std::string::npos) return "";
  cl_uint info[4] = {};
  if (clGetDeviceInfo(d, kPciBusInfo, sizeof info, info, nullptr) != CL_SUCCESS) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", info[0], info[1], info[2], info[3]);
  return buf;
}

struct Inventory {
  std::vector<DeviceRecord> devices;
  std::string reason;
  Inventory() {
    cl_uint np = 0;
    const cl_int err = clGetPlatformIDs(0, nullptr, &np);
    if (err != CL_SUCCESS || np == 0) {
      reason = err == CL_SUCCESS || err == -1001  // CL_PLATFORM_NOT_FOUND_KHR
                   ? "no OpenCL platform is installed (no ICD in /etc/OpenCL/vendors or "
                     "OCL_ICD_VENDORS)"
                   : "the OpenCL loader failed (error " + std::to_string(err) + ")";
      return;
    }
    std::vector<cl_platform_id> platforms(np);
    clGetPlatformIDs(np, platforms.data(), nullptr);
    for (cl_platform_id p : platforms) {
      char pname[256] = {};
      clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof pname - 1, pname, nullptr);
      cl_uint nd = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> ids(nd);
      clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
      for (cl_device_id d : ids) {
        DeviceRecord r;
        r.platform = p;
        r.id = d;
        r.platform_name = pname;
        r.name = device_string(d, CL_DEVICE_NAME);
        r.vendor = device_string(d, CL_DEVICE_VENDOR);
        r.version = device_string(d, CL_DEVICE_VERSION);
        const std::string ext = device_string(d, CL_DEVICE_EXTENSIONS);
        cl_device_type type = 0;
        clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
        clGetDeviceInfo(d, CL_DEVICE_VENDOR_ID, sizeof r.vendor_id, &r.vendor_id, nullptr);
        cl_ulong mem = 0;
        clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr);
        r.memory = mem;
        cl_ulong max_alloc = 0;
        clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr);
        r.max_alloc = max_alloc;
        clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof r.compute_units, &r.compute_units,
                        nullptr);
        if (r.compute_units == 0) r.compute_units = 1;
        r.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
        r.fp16 = ext.find("cl_khr_fp16") != std::string::npos;
        r.bf16 = ext.find("cl_intel_bfloat16_conversions") != std::string::npos;
        r.subgroups_khr = ext.find("cl_khr_subgroups") != std::string::npos;
        r.command_buffer = ext.find("cl_khr_command_buffer") != std::string::npos;
        if (r.command_buffer) {
          cl_device_command_buffer_capabilities_khr caps = 0;
          if (clGetDeviceInfo(d, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps,
                              nullptr) == CL_SUCCESS) {
            r.command_buffer_simultaneous =
                (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
          }
        }
        r.subgroups = r.subgroups_khr || ext.find("cl_intel_subgroups") != std::string::npos;
        r.pci_bus_id = pci_address(d, ext);
        devices.push_back(r);
      }
    }
    if (devices.empty()) reason = "the OpenCL platforms report no device";
  }
};

const Inventory& inventory() {
  static const Inventory inv;
  return inv;
}

// Stand-in addresses: allocation i owns [kBase + i * kSpan, + nbytes). Non-canonical on x86-64.
constexpr uintptr_t kBase = uintptr_t{0xA} << 60;
constexpr uintptr_t kSpan = uintptr_t{1} << 40;

// A large buffer that allocations are ranges of.
struct Pool {
  cl_mem mem = nullptr;
  int device = -1;  // devices() index
  RangeAllocator ranges;
  explicit Pool(size_t capacity) : ranges(capacity) {}
};

struct Allocation {
  Pool* pool;
  size_t offset, nbytes;
};

struct Allocations {
  std::mutex mu;
  std::vector<std::unique_ptr<Pool>> pools;
  std::map<uintptr_t, Allocation> live;  // stand-in base -> its range
  std::vector<uintptr_t> free_slots;
  uintptr_t next = 0;
};

Allocations& allocations() {
  static Allocations* a = new Allocations();  // lives for the process: buffers die at exit
  return *a;
}

// Bytes of a new pool on device record `r`: an eighth of the device's memory (so a model and
// its activations usually share one pool, and a launch passes one buffer), at most the largest
// buffer the device allows, at least 64 MiB and the request. ANVIL_OPENCL_POOL_MB overrides the
// eighth (the tests make it small to run the kernels on tensors spread over many buffers).
size_t pool_bytes(const DeviceRecord& r, size_t request) {
  size_t bytes = static_cast<size_t>(r.memory / 8);
  bytes = std::max<size_t>(bytes, size_t{64} << 20);
  if (r.max_alloc > 0) bytes = std::min<size_t>(bytes, static_cast<size_t>(r.max_alloc));
  if (const char* mb = std::getenv("ANVIL_OPENCL_POOL_MB")) {
    bytes = static_cast<size_t>(std::max(1L, std::atol(mb))) << 20;
  }
  return std::max(bytes, request);
}

class ClBuffer : public Buffer {
 public:
  ClBuffer(void* address, size_t nbytes, Device device) : Buffer(address, nbytes, device) {}
  ~ClBuffer() override {
    Allocations& a = allocations();
    std::lock_guard<std::mutex> lock(a.mu);
    const auto base = reinterpret_cast<uintptr_t>(data());
    auto it = a.live.find(base);
    if (it == a.live.end()) return;
    Pool* pool = it->second.pool;
    pool->ranges.release(it->second.offset);
    a.live.erase(it);
    a.free_slots.push_back(base);
    if (pool->ranges.empty()) {  // an empty pool goes back to the device
      clReleaseMemObject(pool->mem);
      std::erase_if(a.pools, [&](const std::unique_ptr<Pool>& p) { return p.get() == pool; });
    }
  }
};

}  // namespace

const std::vector<DeviceRecord>& devices() {
  return inventory().devices;
}
const std::string& unavailable_reason() {
  return inventory().reason;
}

std::vector<int> intel_gpus() {
  std::vector<int> out;
  const auto& d = devices();
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i].gpu && d[i].vendor_id == kIntelVendorId) out.push_back(static_cast<int>(i));
  }
  return out;
}

int record_index(Device device) {
  const int i = device.ordinal();
  if (device.type == DeviceType::xpu) {
    const auto gpus = intel_gpus();
    if (i >= static_cast<int>(gpus.size())) {
      throw Error("device '" + device.str() + "' is not available: " + std::to_string(gpus.size()) +
                  " Intel GPU(s) among the OpenCL devices");
    }
    return gpus[static_cast<size_t>(i)];
  }
  if (i >= static_cast<int>(devices().size())) {
    throw Error("device '" + device.str() + "' is not available: " +
                std::to_string(devices().size()) + " OpenCL device(s) visible");
  }
  return i;
}

Queue& queue(Device device) {
  static std::mutex mu;
  static std::map<int, Queue> queues;
  const int i = record_index(device);
  std::lock_guard<std::mutex> lock(mu);
  Queue& q = queues[i];
  if (!q.queue) {
    const DeviceRecord& r = devices()[static_cast<size_t>(i)];
    cl_int err = CL_SUCCESS;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                           reinterpret_cast<cl_context_properties>(r.platform), 0};
    q.context = clCreateContext(props, 1, &r.id, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    q.queue =
        clCreateCommandQueue(q.context, r.id, profiling() ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    check(err, "clCreateCommandQueue");
    q.record = &r;
  }
  return q;
}

std::shared_ptr<Buffer> allocate(Device device, size_t nbytes) {
  Queue& q = queue(device);
  const int index = record_index(device);
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mu);
  Pool* pool = nullptr;
  std::optional<size_t> offset;
  for (auto& p : a.pools) {
    if (p->device != index) continue;
    offset = p->ranges.allocate(nbytes);
    if (offset) {
      pool = p.get();
      break;
    }
  }
  if (!pool) {
    const size_t want = pool_bytes(*q.record, nbytes + RangeAllocator::kAlign);
    auto made = std::make_unique<Pool>(want);
    cl_int err = CL_SUCCESS;
    made->mem =
        clCreateBuffer(q.context, CL_MEM_READ_WRITE, made->ranges.capacity(), nullptr, &err);
    if (err != CL_SUCCESS) {
      throw Error("out of memory on " + device.str() + " allocating " + std::to_string(nbytes) +
                  " bytes (a pool of " + std::to_string(made->ranges.capacity()) +
                  " bytes: OpenCL error " + std::to_string(err) + ")");
    }
    made->device = index;
    offset = made->ranges.allocate(nbytes);
    pool = made.get();
    a.pools.push_back(std::move(made));
  }
  uintptr_t base;
  if (!a.free_slots.empty()) {
    base = a.free_slots.back();
    a.free_slots.pop_back();
  } else {
    base = kBase + (a.next++) * kSpan;
  }
  a.live[base] = {pool, *offset, nbytes};
  return std::make_shared<ClBuffer>(reinterpret_cast<void*>(base), nbytes, device);
}

Location locate(const void* address) {
  const auto p = reinterpret_cast<uintptr_t>(address);
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.live.upper_bound(p);
  if (it != a.live.begin()) {
    --it;
    if (p >= it->first && p - it->first <= it->second.nbytes) {
      return {it->second.pool->mem, it->second.offset + static_cast<size_t>(p - it->first)};
    }
  }
  throw Error("internal error: an OpenCL kernel was given an address that is no OpenCL buffer");
}

// ANVIL_OPENCL_DUMP=DIR: each built program's binary (PTX on NVIDIA's driver) goes to
// DIR/program-N.bin, its build options to DIR/program-N.txt, for reading what a driver's
// compiler made of the kernels (ptxas -v: registers, spills) where no profiler reaches them.
static void dump_binary(cl_program prog, const std::string& opts) {
  static const char* dir = std::getenv("ANVIL_OPENCL_DUMP");
  static int count = 0;
  if (!dir) return;
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS ||
      size == 0) {
    return;
  }
  std::string binary(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
  const std::string base = std::string(dir) + "/program-" + std::to_string(count++);
  if (FILE* f = std::fopen((base + ".bin").c_str(), "wb")) {
    std::fwrite(binary.data(), 1, binary.size(), f);
    std::fclose(f);
  }
  if (FILE* f = std::fopen((base + ".txt").c_str(), "w")) {
    std::fprintf(f, "%s\n", opts.c_str());
    std::fclose(f);
  }
}

// anvil's OpenCL C sources built for q's device with `opts`; null (and the build log in `log`)
// when the build fails.
static cl_program build_program(Queue& q, const std::string& opts, std::string& log) {
  cl_int err = CL_SUCCESS;
  const char* src = kOpenClSource;
  cl_program prog = clCreateProgramWithSource(q.context, 1, &src, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(prog, 1, &q.record->id, opts.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS) {
    dump_binary(prog, opts);
    return prog;
  }
  size_t n = 0;
  clGetProgramBuildInfo(prog, q.record->id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  log.assign(n, '\0');
  clGetProgramBuildInfo(prog, q.record->id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  clReleaseProgram(prog);
  return nullptr;
}

cl_kernel kernel(Device device, const std::string& name, const std::string& options) {
  static std::mutex mu;
  static std::map<std::tuple<int, std::string>, cl_program> programs;
  static std::map<std::tuple<int, std::string, std::string>, cl_kernel> kernels;
  const int i = record_index(device);
  Queue& q = queue(device);
  std::lock_guard<std::mutex> lock(mu);
  auto kit = kernels.find({i, options, name});
  if (kit != kernels.end()) return kit->second;
  cl_program& prog = programs[{i, options}];
  if (!prog) {
    // Subgroup reductions where the device reports them (cl_khr_subgroups is OpenCL C 2.0); a
    // driver that then fails to build them gets the plain work-group reductions instead, with a
    // note, rather than no kernels at all.
    const DeviceRecord& r = *q.record;
    std::string log;
    // ANVIL_OPENCL_DEFINES: extra build options (tuning defines such as -DTEAM_LOADS=4, for
    // measuring kernel variants without rebuilding anvil).
    static const char* extra = std::getenv("ANVIL_OPENCL_DEFINES");
    const std::string options_used = extra ? options + " " + extra : options;
    // NVIDIA's driver has no subgroups but takes inline PTX: warp shuffles instead (see
    // NV_WARP_SHUFFLE in opencl_sources.cc). ANVIL_OPENCL_NO_WARP_SHUFFLE=1 turns them off.
    static const bool no_shuffle = std::getenv("ANVIL_OPENCL_NO_WARP_SHUFFLE") != nullptr;
    if (!r.subgroups && r.gpu && r.vendor_id == kNvidiaVendorId && !no_shuffle) {
      prog = build_program(q, "-cl-std=CL1.2 -DNV_WARP_SHUFFLE " + options_used, log);
      if (!prog) {
        std::fprintf(stderr,
                     "anvil: %s: OpenCL warp-shuffle kernels did not build; using work-group "
                     "reductions\n",
                     r.name.c_str());
      }
    }
    if (!prog && r.subgroups) {
      const std::string std_opts = r.subgroups_khr ? "-cl-std=CL2.0" : "-cl-std=CL1.2";
      prog = build_program(q, std_opts + " -DUSE_SUBGROUPS " + options_used, log);
      if (!prog) {
        std::fprintf(stderr,
                     "anvil: %s: OpenCL subgroup kernels did not build; using work-group "
                     "reductions\n",
                     r.name.c_str());
      }
    }
    if (!prog) {
      const std::string opts = "-cl-std=CL1.2 " + options_used;
      prog = build_program(q, opts, log);
      if (!prog) {
        throw Error("building anvil's OpenCL kernels for " + r.name + " (" + opts + ") failed:\n" +
                    log);
      }
    }
  }
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, name.c_str(), &err);
  check(err, ("clCreateKernel " + name).c_str());
  kernels[{i, options, name}] = k;
  return k;
}

}  // namespace anvil::opencl
