// An OpenCL program that knows nothing of kcache: it builds programs from
// source and prints, one line each, every answer a program can see of
// them (build status and log, source, kernel names and counts, arguments,
// reference counts, results of running the kernels). tests/layers/
// opencl_layer.sh runs it without the layer and under it, and compares.
//
// Usage: layer_probe INCLUDE_DIR [THREADS]
//   INCLUDE_DIR holds probe.h, which the source includes through -I.
//   LAYER_PROBE_NO_RUN=1: no kernel is launched (every sum reads 0), for
//   ThreadSanitizer, which PoCL's own device threads would trip.
// Exit 0 when every call answered as OpenCL says it must; 1 otherwise
// (the line says what); 125 when there is no OpenCL platform.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* kSource = R"(#include "probe.h"
#warning kcache probe warning
kernel void scale(global int* a, int s) { size_t i = get_global_id(0); a[i] = a[i] * s * SCALE + OFFSET; }
kernel void add(global int* a, global const int* b) { size_t i = get_global_id(0); a[i] += b[i]; }
)";

const char* kBroken = "kernel void broken(global int* a) { a[0] = undeclared_probe_name; }\n";

[[noreturn]] void fail(const std::string& what, cl_int err) {
  std::printf("FAIL %s (OpenCL error %d)\n", what.c_str(), err);
  std::exit(1);
}

void check(cl_int err, const std::string& what) {
  if (err != CL_SUCCESS) fail(what, err);
}

// A text answer of `query(size, value, size_ret)`, without its NUL.
template <class Query>
std::string text_of(Query query, const char* what) {
  std::size_t size = 0;
  check(query(0, nullptr, &size), std::string(what) + " size");
  std::string text(size, '\0');
  check(query(size, text.data(), nullptr), what);
  if (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

// A value answer of `query(size, value, size_ret)`.
template <class T, class Query>
T value_of(Query query, const char* what) {
  T value{};
  check(query(sizeof value, &value, nullptr), what);
  return value;
}

std::string program_text(cl_program program, cl_program_info what) {
  return text_of([&](std::size_t n, void* v,
                     std::size_t* r) { return clGetProgramInfo(program, what, n, v, r); },
                 "program info");
}

std::string build_text(cl_program program, cl_device_id device, cl_program_build_info what) {
  return text_of(
      [&](std::size_t n, void* v, std::size_t* r) {
        return clGetProgramBuildInfo(program, device, what, n, v, r);
      },
      "build info");
}

std::string kernel_text(cl_kernel kernel, cl_kernel_info what) {
  return text_of([&](std::size_t n, void* v,
                     std::size_t* r) { return clGetKernelInfo(kernel, what, n, v, r); },
                 "kernel info");
}

template <class T>
T build_value(cl_program program, cl_device_id device, cl_program_build_info what) {
  return value_of<T>(
      [&](std::size_t n, void* v, std::size_t* r) {
        return clGetProgramBuildInfo(program, device, what, n, v, r);
      },
      "build info value");
}

template <class T>
T program_value(cl_program program, cl_program_info what) {
  return value_of<T>([&](std::size_t n, void* v,
                         std::size_t* r) { return clGetProgramInfo(program, what, n, v, r); },
                     "program info value");
}

template <class T>
T kernel_value(cl_kernel kernel, cl_kernel_info what) {
  return value_of<T>([&](std::size_t n, void* v,
                         std::size_t* r) { return clGetKernelInfo(kernel, what, n, v, r); },
                     "kernel info value");
}

struct Notified {
  std::atomic<int> calls{0};
  cl_program program = nullptr;
};

void CL_CALLBACK on_built(cl_program program, void* data) {
  auto* notified = static_cast<Notified*>(data);
  notified->program = program;
  ++notified->calls;
}

// Runs scale(a, s) then add(a, b) over n items; returns the sum of a.
long run(cl_context context, cl_device_id device, cl_kernel scale, cl_kernel add, int s) {
  static const bool no_run = std::getenv("LAYER_PROBE_NO_RUN") != nullptr;
  if (no_run) return 0;
  constexpr int n = 64;
  std::vector<int> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = i;
    b[i] = 2 * i + 1;
  }
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  cl_mem da = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(int) * n,
                             a.data(), &err);
  check(err, "clCreateBuffer a");
  cl_mem db = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(int) * n,
                             b.data(), &err);
  check(err, "clCreateBuffer b");
  check(clSetKernelArg(scale, 0, sizeof da, &da), "arg 0 of scale");
  check(clSetKernelArg(scale, 1, sizeof s, &s), "arg 1 of scale");
  check(clSetKernelArg(add, 0, sizeof da, &da), "arg 0 of add");
  check(clSetKernelArg(add, 1, sizeof db, &db), "arg 1 of add");
  const std::size_t global = n;
  check(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
        "enqueue scale");
  check(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
        "enqueue add");
  check(clEnqueueReadBuffer(queue, da, CL_TRUE, 0, sizeof(int) * n, a.data(), 0, nullptr, nullptr),
        "read back");
  clReleaseMemObject(da);
  clReleaseMemObject(db);
  clReleaseCommandQueue(queue);
  long sum = 0;
  for (int v : a) sum += v;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: layer_probe INCLUDE_DIR [THREADS]\n");
    return 2;
  }
  const std::string include_dir = argv[1];
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  cl_platform_id platform = nullptr;
  cl_uint platforms = 0;
  if (clGetPlatformIDs(1, &platform, &platforms) != CL_SUCCESS || platforms == 0) {
    std::printf("SKIP no OpenCL platform\n");
    return 125;
  }
  cl_uint count = 0;
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS ||
      count == 0) {
    std::printf("SKIP no OpenCL device\n");
    return 125;
  }
  std::vector<cl_device_id> devices(count);
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), "devices");
  std::printf("devices: %u\n", count);
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, count, devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext");

  const std::string options = " -DSCALE=3 -I" + include_dir + " -cl-kernel-arg-info";
  const char* source = kSource;
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  std::printf("before build: source matches: %d\n",
              program_text(program, CL_PROGRAM_SOURCE) == kSource);
  std::printf("before build: refcount %u\n",
              program_value<cl_uint>(program, CL_PROGRAM_REFERENCE_COUNT));
  for (cl_uint d = 0; d < count; ++d) {
    std::printf("before build: device %u status %d type %u\n", d,
                build_value<cl_build_status>(program, devices[d], CL_PROGRAM_BUILD_STATUS),
                build_value<cl_program_binary_type>(program, devices[d], CL_PROGRAM_BINARY_TYPE));
  }
  std::size_t size = 0;
  std::printf("before build: kernel count query %d\n",
              clGetProgramInfo(program, CL_PROGRAM_NUM_KERNELS, sizeof size, &size, nullptr));

  Notified notified;
  check(clBuildProgram(program, 0, nullptr, options.c_str(), on_built, &notified),
        "clBuildProgram");
  std::printf("notify: calls %d, with the program %d\n", notified.calls.load(),
              notified.program == program);
  std::printf("source matches: %d\n", program_text(program, CL_PROGRAM_SOURCE) == kSource);
  std::printf("context matches: %d\n",
              program_value<cl_context>(program, CL_PROGRAM_CONTEXT) == context);
  std::printf("num devices: %u\n", program_value<cl_uint>(program, CL_PROGRAM_NUM_DEVICES));
  for (cl_uint d = 0; d < count; ++d) {
    const std::string log = build_text(program, devices[d], CL_PROGRAM_BUILD_LOG);
    std::printf("device %u: status %d type %u options '%s' log has the warning %d\n", d,
                build_value<cl_build_status>(program, devices[d], CL_PROGRAM_BUILD_STATUS),
                build_value<cl_program_binary_type>(program, devices[d], CL_PROGRAM_BINARY_TYPE),
                build_text(program, devices[d], CL_PROGRAM_BUILD_OPTIONS).c_str(),
                log.find("kcache probe warning") != std::string::npos);
  }
  std::printf("kernels: %zu '%s'\n", program_value<std::size_t>(program, CL_PROGRAM_NUM_KERNELS),
              program_text(program, CL_PROGRAM_KERNEL_NAMES).c_str());
  std::vector<std::size_t> sizes(count);
  check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(std::size_t) * count,
                         sizes.data(), nullptr),
        "binary sizes");
  std::vector<std::vector<unsigned char>> binaries(count);
  std::vector<unsigned char*> pointers(count);
  for (cl_uint d = 0; d < count; ++d) {
    binaries[d].resize(sizes[d]);
    pointers[d] = binaries[d].data();
  }
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(unsigned char*) * count,
                         pointers.data(), nullptr),
        "binaries");
  for (cl_uint d = 0; d < count; ++d) {
    std::printf("binary %u: nonempty %d\n", d, sizes[d] > 0);
  }

  cl_kernel scale = clCreateKernel(program, "scale", &err);
  check(err, "clCreateKernel scale");
  cl_kernel all[4] = {};
  cl_uint made = 0;
  check(clCreateKernelsInProgram(program, 4, all, &made), "clCreateKernelsInProgram");
  std::printf("kernels made: %u\n", made);
  cl_kernel add = nullptr;
  for (cl_uint i = 0; i < made; ++i) {
    if (kernel_text(all[i], CL_KERNEL_FUNCTION_NAME) == "add") add = all[i];
  }
  if (add == nullptr) fail("no kernel named add", 0);
  cl_kernel clone = clCloneKernel(scale, &err);
  check(err, "clCloneKernel");
  std::printf("refcount with kernels: %u\n",
              program_value<cl_uint>(program, CL_PROGRAM_REFERENCE_COUNT));
  for (cl_kernel k : {scale, add, clone}) {
    std::printf("kernel %s: args %u, program matches %d, context matches %d\n",
                kernel_text(k, CL_KERNEL_FUNCTION_NAME).c_str(),
                kernel_value<cl_uint>(k, CL_KERNEL_NUM_ARGS),
                kernel_value<cl_program>(k, CL_KERNEL_PROGRAM) == program,
                kernel_value<cl_context>(k, CL_KERNEL_CONTEXT) == context);
  }
  char arg_name[64] = {};
  check(clGetKernelArgInfo(scale, 1, CL_KERNEL_ARG_NAME, sizeof arg_name, arg_name, nullptr),
        "clGetKernelArgInfo");
  std::printf("arg 1 of scale: %s\n", arg_name);
  std::printf("rebuild with kernels: %d\n",
              clBuildProgram(program, 0, nullptr, options.c_str(), nullptr, nullptr));
  for (cl_uint d = 0; d < count; ++d) {
    std::printf("device %u: sum %ld, clone sum %ld\n", d, run(context, devices[d], scale, add, 2),
                run(context, devices[d], clone, add, 2));
  }
  // The program outlives its kernels' handles as OpenCL says: released
  // here, it lives on in them.
  check(clReleaseProgram(program), "release the program with kernels");
  std::printf("after its release: kernel program matches %d\n",
              kernel_value<cl_program>(scale, CL_KERNEL_PROGRAM) == program);
  clReleaseKernel(clone);
  for (cl_uint i = 0; i < made; ++i) clReleaseKernel(all[i]);
  clReleaseKernel(scale);

  // Built again with other options once its kernels are gone: new results.
  cl_program again = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  check(err, "clCreateProgramWithSource again");
  check(clBuildProgram(again, 0, nullptr, options.c_str(), nullptr, nullptr), "first build");
  const std::string five = " -DSCALE=5 -I" + include_dir;
  check(clBuildProgram(again, count, devices.data(), five.c_str(), nullptr, nullptr),
        "second build");
  std::printf("rebuilt: options '%s'\n",
              build_text(again, devices[0], CL_PROGRAM_BUILD_OPTIONS).c_str());
  cl_kernel s5 = clCreateKernel(again, "scale", &err);
  check(err, "clCreateKernel after the rebuild");
  cl_kernel a5 = clCreateKernel(again, "add", &err);
  check(err, "clCreateKernel add after the rebuild");
  std::printf("rebuilt: sum %ld\n", run(context, devices[0], s5, a5, 2));
  clReleaseKernel(s5);
  clReleaseKernel(a5);
  std::printf("rebuilt: refcount %u\n", program_value<cl_uint>(again, CL_PROGRAM_REFERENCE_COUNT));
  clReleaseProgram(again);

  // A rebuild that fails after one that worked: it fails, as it would.
  cl_program failing = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  check(err, "clCreateProgramWithSource failing");
  check(clBuildProgram(failing, 0, nullptr, options.c_str(), nullptr, nullptr), "good build");
  const std::string bad = " -DSCALE=+) -I" + include_dir;
  const cl_int failed = clBuildProgram(failing, 0, nullptr, bad.c_str(), nullptr, nullptr);
  cl_int kernel_err = CL_SUCCESS;
  cl_kernel none = clCreateKernel(failing, "scale", &kernel_err);
  std::printf("failed rebuild: build %d, status %d, kernel %d\n", failed,
              build_value<cl_build_status>(failing, devices[0], CL_PROGRAM_BUILD_STATUS),
              kernel_err);
  if (none != nullptr) clReleaseKernel(none);
  clReleaseProgram(failing);

  // From the binaries read above: the platform's own path.
  std::vector<const unsigned char*> loaded(pointers.begin(), pointers.end());
  cl_program from_binary = clCreateProgramWithBinary(context, count, devices.data(), sizes.data(),
                                                     loaded.data(), nullptr, &err);
  check(err, "clCreateProgramWithBinary");
  check(clBuildProgram(from_binary, 0, nullptr, options.c_str(), nullptr, nullptr),
        "build from binary");
  std::printf("from binary: source empty %d\n",
              program_text(from_binary, CL_PROGRAM_SOURCE).empty());
  cl_kernel bs = clCreateKernel(from_binary, "scale", &err);
  check(err, "clCreateKernel from binary");
  cl_kernel ba = clCreateKernel(from_binary, "add", &err);
  check(err, "clCreateKernel add from binary");
  std::printf("from binary: sum %ld\n", run(context, devices[0], bs, ba, 2));
  clReleaseKernel(bs);
  clReleaseKernel(ba);
  clReleaseProgram(from_binary);

  // A build that fails: its status and log as the compiler gave them.
  const char* broken_source = kBroken;
  cl_program broken = clCreateProgramWithSource(context, 1, &broken_source, nullptr, &err);
  check(err, "clCreateProgramWithSource broken");
  const cl_int broken_err = clBuildProgram(broken, 0, nullptr, "", nullptr, nullptr);
  std::printf("broken: build %d, status %d, log names the error %d\n", broken_err,
              build_value<cl_build_status>(broken, devices[0], CL_PROGRAM_BUILD_STATUS),
              build_text(broken, devices[0], CL_PROGRAM_BUILD_LOG).find("undeclared_probe_name") !=
                  std::string::npos);
  clReleaseProgram(broken);

  // Many threads, each its own program of one source, built at once.
  std::vector<long> sums(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      cl_int e = CL_SUCCESS;
      cl_program p = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
      check(e, "thread: clCreateProgramWithSource");
      check(clBuildProgram(p, 0, nullptr, options.c_str(), nullptr, nullptr), "thread: build");
      cl_kernel ks = clCreateKernel(p, "scale", &e);
      check(e, "thread: scale");
      cl_kernel ka = clCreateKernel(p, "add", &e);
      check(e, "thread: add");
      clReleaseProgram(p);
      sums[static_cast<std::size_t>(t)] = run(context, devices[0], ks, ka, t);
      clReleaseKernel(ks);
      clReleaseKernel(ka);
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t)
    std::printf("thread %d: sum %ld\n", t, sums[static_cast<std::size_t>(t)]);
  clReleaseContext(context);
  std::printf("done\n");
  return 0;
}
