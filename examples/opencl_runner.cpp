#include "opencl_runner.h"

// CL_TARGET_OPENCL_VERSION=120 comes from CMake, for every file of the demo.
#include <CL/cl.h>

#include <cstring>

namespace kcache_demo {
namespace {

std::string cl_error(const char* call, cl_int code) {
  return std::string(call) + " failed with OpenCL error " + std::to_string(code);
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  clGetPlatformInfo(platform, what, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  clGetDeviceInfo(device, what, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

std::vector<cl_platform_id> platforms() {
  cl_uint count = 0;
  // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no
  // platform is installed: that is "none", not an error to report.
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_platform_id> ids(count);
  if (clGetPlatformIDs(count, ids.data(), nullptr) != CL_SUCCESS) return {};
  return ids;
}

std::vector<cl_device_id> devices(cl_platform_id platform) {
  cl_uint count = 0;
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS ||
      count == 0) {
    return {};
  }
  std::vector<cl_device_id> ids(count);
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr) != CL_SUCCESS) {
    return {};
  }
  return ids;
}

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return {};
  }
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  log.resize(std::strlen(log.c_str()));
  return log;
}

}  // namespace

std::vector<std::string> list_opencl_devices() {
  std::vector<std::string> lines;
  const auto platform_ids = platforms();
  for (std::size_t p = 0; p < platform_ids.size(); ++p) {
    const auto device_ids = devices(platform_ids[p]);
    for (std::size_t d = 0; d < device_ids.size(); ++d) {
      lines.push_back("platform " + std::to_string(p) + " device " + std::to_string(d) + ": " +
                      device_string(device_ids[d], CL_DEVICE_NAME) + " (" +
                      platform_string(platform_ids[p], CL_PLATFORM_NAME) + ", " +
                      platform_string(platform_ids[p], CL_PLATFORM_VERSION) + ")");
    }
  }
  return lines;
}

kcache::Result<std::unique_ptr<OpenClDevice>> OpenClDevice::open() {
  for (cl_platform_id platform : platforms()) {
    const auto device_ids = devices(platform);
    if (device_ids.empty()) continue;
    cl_device_id device = device_ids.front();
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clCreateContext", err));
    std::string description = device_string(device, CL_DEVICE_NAME) + " (" +
                              platform_string(platform, CL_PLATFORM_NAME) + ", " +
                              platform_string(platform, CL_PLATFORM_VERSION) + ")";
    return std::unique_ptr<OpenClDevice>(new OpenClDevice(context, device, std::move(description)));
  }
  return kcache::Status::unavailable(
      "no OpenCL platform with a device is installed (on Debian: apt-get install "
      "pocl-opencl-icd)");
}

OpenClDevice::~OpenClDevice() { clReleaseContext(static_cast<cl_context>(context_)); }

kcache::Result<std::unique_ptr<KernelRun>> KernelRun::prepare(void* context, void* device,
                                                              const KernelSpec& spec) {
  std::unique_ptr<KernelRun> run(new KernelRun(context, device, spec));
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(static_cast<cl_context>(context),
                                                static_cast<cl_device_id>(device), 0, &err);
  if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clCreateCommandQueue", err));
  run->queue_ = queue;
  for (const KernelArg& arg : spec.args) {
    cl_mem buffer = nullptr;
    if (arg.kind == KernelArg::Kind::kInput) {
      buffer = clCreateBuffer(static_cast<cl_context>(context), CL_MEM_READ_ONLY,
                              arg.values.size() * sizeof(float), nullptr, &err);
      if (err == CL_SUCCESS) {
        err = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, arg.values.size() * sizeof(float),
                                   arg.values.data(), 0, nullptr, nullptr);
      }
    } else if (arg.kind == KernelArg::Kind::kOutput) {
      buffer = clCreateBuffer(static_cast<cl_context>(context), CL_MEM_WRITE_ONLY,
                              arg.count * sizeof(float), nullptr, &err);
    }
    run->buffers_.push_back(buffer);  // released with the run, even on error
    if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("creating a buffer", err));
  }
  return run;
}

KernelRun::~KernelRun() {
  if (kernel_ != nullptr) clReleaseKernel(static_cast<cl_kernel>(kernel_));
  // Releasing the program matters on PoCL beyond memory: with
  // POCL_KERNEL_CACHE=0 PoCL deletes the program's cache folder only then.
  if (program_ != nullptr) clReleaseProgram(static_cast<cl_program>(program_));
  for (void* buffer : buffers_) {
    if (buffer != nullptr) clReleaseMemObject(static_cast<cl_mem>(buffer));
  }
  if (queue_ != nullptr) clReleaseCommandQueue(static_cast<cl_command_queue>(queue_));
}

kcache::Status KernelRun::load_binary(std::span<const std::uint8_t> binary) {
  cl_device_id device = static_cast<cl_device_id>(device_);
  const std::size_t size = binary.size();
  const unsigned char* bytes = binary.data();
  cl_int binary_status = CL_SUCCESS;
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(static_cast<cl_context>(context_), 1, &device,
                                                 &size, &bytes, &binary_status, &err);
  if (err != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program != nullptr) clReleaseProgram(program);
    return kcache::Status::unavailable(
        cl_error("clCreateProgramWithBinary", err != CL_SUCCESS ? err : binary_status));
  }
  program_ = program;
  err = clBuildProgram(program, 1, &device, spec_.build_options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    return kcache::Status::compile_error(cl_error("clBuildProgram of the binary", err),
                                         build_log(program, device));
  }
  return use_program(program);
}

kcache::Status KernelRun::use_program(void* program) {
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(static_cast<cl_program>(program), spec_.name.c_str(), &err);
  if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clCreateKernel", err));
  kernel_ = kernel;
  return kcache::Status::ok();
}

kcache::Status KernelRun::launch() {
  cl_kernel kernel = static_cast<cl_kernel>(kernel_);
  if (kernel == nullptr) return kcache::Status::invalid_argument("no kernel to launch");
  for (std::size_t i = 0; i < spec_.args.size(); ++i) {
    const auto index = static_cast<cl_uint>(i);
    cl_int err = CL_SUCCESS;
    if (spec_.args[i].kind == KernelArg::Kind::kInt) {
      const cl_int value = spec_.args[i].value;
      err = clSetKernelArg(kernel, index, sizeof value, &value);
    } else {
      cl_mem buffer = static_cast<cl_mem>(buffers_[i]);
      err = clSetKernelArg(kernel, index, sizeof buffer, &buffer);
    }
    if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clSetKernelArg", err));
  }
  auto queue = static_cast<cl_command_queue>(queue_);
  const Launch& launch = spec_.launch;
  cl_int err = clEnqueueNDRangeKernel(queue, kernel, launch.dims, nullptr, launch.global.data(),
                                      launch.local.data(), 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    return kcache::Status::unavailable(cl_error("clEnqueueNDRangeKernel", err));
  err = clFinish(queue);
  if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clFinish", err));
  return kcache::Status::ok();
}

kcache::Result<std::vector<float>> KernelRun::read_output() {
  for (std::size_t i = 0; i < spec_.args.size(); ++i) {
    if (spec_.args[i].kind != KernelArg::Kind::kOutput) continue;
    std::vector<float> values(spec_.args[i].count);
    cl_int err = clEnqueueReadBuffer(
        static_cast<cl_command_queue>(queue_), static_cast<cl_mem>(buffers_[i]), CL_TRUE, 0,
        values.size() * sizeof(float), values.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return kcache::Status::unavailable(cl_error("clEnqueueReadBuffer", err));
    return values;
  }
  return kcache::Status::invalid_argument("the kernel " + spec_.name + " has no output buffer");
}

kcache::Status warm_up(const kcache::BuiltProgram& built, const KernelSpec& spec) {
  auto run = KernelRun::prepare(built.context, built.device, spec);
  if (!run) return run.status();
  if (kcache::Status s = (*run)->use_program(built.program); !s.is_ok()) return s;
  return (*run)->launch();
}

}  // namespace kcache_demo
