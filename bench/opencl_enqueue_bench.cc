// What one kernel launch costs the host on an OpenCL driver, and what it costs the device, as the
// argument list changes: a decode step on a GPU is ~125 small launches, and on NVIDIA's driver
// (no command buffers) the host's enqueueing is as long as the kernels. Each case enqueues the
// same trivial kernel many times and reports microseconds per launch:
//   host      the clSetKernelArg calls and clEnqueueNDRangeKernel, with the queue running;
//   gated     the same, behind a user event (the device idle), then the device's time per
//             launch once released (back to back, no host in the way).
// Cases: one buffer argument; twelve distinct buffers; one buffer twelve times; twelve
// sub-buffers of one buffer; twelve distinct buffers with the arguments set once; one buffer
// and twelve ints; one or two buffers and a struct of offsets and sizes passed by value.
//
//   anvil_opencl_enqueue_bench [DEVICE_INDEX] [LAUNCHES]   (index among all devices, GPUs first)
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char* kSource = R"CLC(
__kernel void one(__global float* a) { if (get_global_id(0) == 0) a[0] += 1.0f; }
__kernel void twelve(__global float* a, __global const float* b1, __global const float* b2,
                     __global const float* b3, __global const float* b4, __global const float* b5,
                     __global const float* b6, __global const float* b7, __global const float* b8,
                     __global const float* b9, __global const float* b10, __global const float* b11) {
  if (get_global_id(0) == 0) a[0] += b1[0] + b2[0] + b3[0] + b4[0] + b5[0] + b6[0] + b7[0] +
                                     b8[0] + b9[0] + b10[0] + b11[0];
}
__kernel void one_twelve_ints(__global float* a, int i1, int i2, int i3, int i4, int i5, int i6,
                              int i7, int i8, int i9, int i10, int i11, int i12) {
  if (get_global_id(0) == 0) a[0] += i1 + i2 + i3 + i4 + i5 + i6 + i7 + i8 + i9 + i10 + i11 + i12;
}
typedef struct { ulong o[24]; int n[16]; } Params;
__kernel void one_struct(__global float* a, Params p) {
  if (get_global_id(0) == 0) a[p.o[3] / 4] += p.n[5];
}
__kernel void two_struct(__global float* a, __global const float* b, Params p) {
  if (get_global_id(0) == 0) a[p.o[3] / 4] += b[p.o[7] / 4] + p.n[5];
}
)CLC";

struct Params {
  cl_ulong o[24];
  cl_int n[16];
};

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, err);
    std::exit(1);
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A kernel argument: a buffer, or plain bytes.
struct Arg {
  size_t size;
  const void* value;
};

struct Case {
  const char* name;
  cl_kernel kernel;
  std::vector<Arg> args;
  bool set_each_launch;
};

void run_case(cl_context ctx, cl_command_queue q, const Case& c, int launches) {
  const size_t global = 128, local = 128;
  auto set_args = [&] {
    for (size_t i = 0; i < c.args.size(); ++i) {
      check(clSetKernelArg(c.kernel, static_cast<cl_uint>(i), c.args[i].size, c.args[i].value),
            "arg");
    }
  };
  set_args();
  // Warm-up, then the queue running.
  for (int i = 0; i < 50; ++i) {
    check(clEnqueueNDRangeKernel(q, c.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "enqueue");
  }
  check(clFinish(q), "finish");
  double t0 = now();
  for (int i = 0; i < launches; ++i) {
    if (c.set_each_launch) set_args();
    check(clEnqueueNDRangeKernel(q, c.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "enqueue");
  }
  const double host = now() - t0;
  check(clFinish(q), "finish");
  const double total = now() - t0;
  // Gated: the first launch waits for a user event.
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(ctx, &err);
  check(err, "user event");
  t0 = now();
  for (int i = 0; i < launches; ++i) {
    if (c.set_each_launch) set_args();
    check(clEnqueueNDRangeKernel(q, c.kernel, 1, nullptr, &global, &local, i == 0 ? 1 : 0,
                                 i == 0 ? &gate : nullptr, nullptr),
          "enqueue");
  }
  const double gated_host = now() - t0;
  const double released = now();
  check(clSetUserEventStatus(gate, CL_COMPLETE), "release");
  check(clFinish(q), "finish");
  const double device = now() - released;
  clReleaseEvent(gate);
  const double n = launches;
  std::printf(
      "%-34s host %6.2f us (with the queue running, done after %7.2f us/launch); gated: "
      "host %6.2f, device %6.2f us per launch\n",
      c.name, host * 1e6 / n, total * 1e6 / n, gated_host * 1e6 / n, device * 1e6 / n);
}

}  // namespace

int main(int argc, char** argv) {
  const int want = argc > 1 ? std::atoi(argv[1]) : 0;
  const int launches = argc > 2 ? std::atoi(argv[2]) : 2000;
  cl_uint np = 0;
  check(clGetPlatformIDs(0, nullptr, &np), "platforms");
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "platforms");
  std::vector<cl_device_id> all;
  for (cl_device_type type :
       {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR}) {
    for (cl_platform_id p : platforms) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(p, type, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> ds(nd);
      check(clGetDeviceIDs(p, type, nd, ds.data(), nullptr), "devices");
      all.insert(all.end(), ds.begin(), ds.end());
    }
  }
  if (want < 0 || static_cast<size_t>(want) >= all.size()) {
    std::fprintf(stderr, "no OpenCL device %d (%zu found)\n", want, all.size());
    return 1;
  }
  cl_device_id dev = all[static_cast<size_t>(want)];
  char name[256] = {};
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  std::printf("device: %s, %d launches per case\n", name, launches);
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  check(err, "context");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  check(err, "queue");
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
  check(err, "program");
  check(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr), "build");
  cl_kernel one = clCreateKernel(prog, "one", &err);
  check(err, "kernel one");
  cl_kernel twelve = clCreateKernel(prog, "twelve", &err);
  check(err, "kernel twelve");
  std::vector<cl_mem> distinct;
  for (int i = 0; i < 12; ++i) {
    distinct.push_back(clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, nullptr, &err));
    check(err, "buffer");
  }
  cl_mem big = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 12 << 20, nullptr, &err);
  check(err, "buffer");
  std::vector<cl_mem> subs;
  cl_uint align_bits = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, nullptr);
  for (int i = 0; i < 12; ++i) {
    cl_buffer_region region{static_cast<size_t>(i) << 20, 1 << 20};
    subs.push_back(
        clCreateSubBuffer(big, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err));
    check(err, "sub-buffer");
  }
  auto buffers = [](const std::vector<cl_mem>& mems) {
    std::vector<Arg> args;
    for (const cl_mem& m : mems) args.push_back({sizeof(cl_mem), &m});
    return args;
  };
  const std::vector<cl_mem> same(12, big), first(1, distinct[0]);
  auto make = [&](const char* kernel_name) {
    cl_kernel k = clCreateKernel(prog, kernel_name, &err);
    check(err, kernel_name);
    return k;
  };
  const cl_int ints[12] = {};
  std::vector<Arg> one_and_ints = {{sizeof(cl_mem), &distinct[0]}};
  for (const cl_int& i : ints) one_and_ints.push_back({sizeof i, &i});
  const Params params{};
  const Case cases[] = {
      {"one buffer", one, buffers(first), true},
      {"twelve distinct buffers", twelve, buffers(distinct), true},
      {"one buffer twelve times", twelve, buffers(same), true},
      {"twelve sub-buffers of one buffer", twelve, buffers(subs), true},
      {"twelve distinct, arguments set once", twelve, buffers(distinct), false},
      {"one buffer, twelve ints", make("one_twelve_ints"), one_and_ints, true},
      {"one buffer, a 256-byte struct",
       make("one_struct"),
       {{sizeof(cl_mem), &distinct[0]}, {sizeof params, &params}},
       true},
      {"two buffers, a 256-byte struct",
       make("two_struct"),
       {{sizeof(cl_mem), &distinct[0]}, {sizeof(cl_mem), &distinct[1]}, {sizeof params, &params}},
       true},
  };
  for (int round = 0; round < 2; ++round) {
    for (const Case& c : cases) run_case(ctx, q, c, launches);
  }
  return 0;
}
