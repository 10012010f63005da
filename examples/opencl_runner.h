// The demo's host side: an OpenCL device, and the buffers, program and
// kernel that run one KernelSpec on it. The only file of the demo that
// includes CL/cl.h is opencl_runner.cpp; OpenCL handles cross this header as
// void* (cl_context, cl_device_id, cl_program), as kcache's API passes them.
//
// Every object releases what it created; nothing here throws.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernel_library.h"

namespace kcache_demo {

// One line per OpenCL platform and device, "platform P device D: name
// (platform name, version)"; empty when there is none.
std::vector<std::string> list_opencl_devices();

// A context on the first device of the first platform that has one.
class OpenClDevice {
 public:
  // kUnavailable when no platform or device is present.
  static kcache::Result<std::unique_ptr<OpenClDevice>> open();
  ~OpenClDevice();
  OpenClDevice(const OpenClDevice&) = delete;
  OpenClDevice& operator=(const OpenClDevice&) = delete;

  void* context() const { return context_; }  // cl_context
  void* device() const { return device_; }    // cl_device_id
  // "<device name> (<platform name>, <platform version>)".
  const std::string& description() const { return description_; }

 private:
  OpenClDevice(void* context, void* device, std::string description)
      : context_(context), device_(device), description_(std::move(description)) {}
  void* context_;
  void* device_;
  std::string description_;
};

// One spec's problem on one context: a queue, the input buffers uploaded,
// the output buffer allocated; then a kernel, from a binary or a program,
// launched on them.
class KernelRun {
 public:
  // `context`/`device` are borrowed (cl_context, cl_device_id) and must
  // outlive the run; so must `spec`. Returns when the inputs are on the
  // device, so that what is timed after it is the kernel alone.
  static kcache::Result<std::unique_ptr<KernelRun>> prepare(void* context, void* device,
                                                            const KernelSpec& spec);
  ~KernelRun();
  KernelRun(const KernelRun&) = delete;
  KernelRun& operator=(const KernelRun&) = delete;

  // Makes a program from `binary` (clCreateProgramWithBinary, then
  // clBuildProgram, which a binary still needs) and creates the kernel. The
  // program is owned by this run and released with it.
  kcache::Status load_binary(std::span<const std::uint8_t> binary);
  // Creates the kernel from a built program someone else owns (kcache's,
  // during a warmup).
  kcache::Status use_program(void* program);
  // Sets the arguments, enqueues the kernel and waits for it to finish.
  kcache::Status launch();
  // The output buffer, read back.
  kcache::Result<std::vector<float>> read_output();

 private:
  KernelRun(void* context, void* device, const KernelSpec& spec)
      : context_(context), device_(device), spec_(spec) {}
  void* context_;
  void* device_;
  const KernelSpec& spec_;
  void* queue_ = nullptr;       // cl_command_queue
  std::vector<void*> buffers_;  // cl_mem per arg, nullptr for scalars
  void* program_ = nullptr;     // cl_program, owned when from a binary
  void* kernel_ = nullptr;      // cl_kernel
};

// A kcache warmup: runs `spec` once on the program kcache just built, so
// that PoCL compiles the work-group code and the binary kcache reads next
// (and stores) is ready to launch. The result is not checked here; the
// demo checks the launch from the stored binary.
kcache::Status warm_up(const kcache::BuiltProgram& built, const KernelSpec& spec);

}  // namespace kcache_demo
