// The few CUDA driver API entry points the demo calls itself (memory,
// launches, device names), loaded from libcuda.so.1 with dlopen. The demo,
// like kcache, builds without the CUDA toolkit and links no GPU library:
// a machine without a driver gets a clear message, not a loader error.
//
// The declarations are the driver's stable C ABI (cuda.h); handles cross as
// void* and CUdeviceptr as unsigned long long. kcache::cuda::ModuleLoader
// loads the same libcuda, so both share one driver and one context.
#pragma once

#include <kcache/status.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kcache_demo {

using CUresult = int;
using CUdeviceptr = unsigned long long;

class CudaDriver {
 public:
  // Loads libcuda.so.1 and calls cuInit. kUnavailable, saying which, when
  // the library is missing (no driver installed) or cuInit fails (no GPU,
  // driver/kernel module mismatch); the message names the driver's error.
  static kcache::Result<std::unique_ptr<CudaDriver>> load();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // ok for CUDA_SUCCESS; otherwise kUnavailable with
  // "<call>: CUDA_ERROR_NAME (the driver's description)".
  [[nodiscard]] kcache::Status check(CUresult rc, const char* call) const;

  // One line per device: "device D: <name>, sm_XY, N SMs, M MiB"; empty when
  // there is none. kUnavailable when the driver cannot be asked.
  [[nodiscard]] kcache::Result<std::vector<std::string>> list_devices() const;
  // "<name>, sm_XY, N SMs" of the current context's device.
  [[nodiscard]] kcache::Result<std::string> current_device() const;
  // "CUDA driver 13.0".
  [[nodiscard]] std::string version() const;

  // The entry points, bound by load(); all non-null after it succeeds.
  CUresult (*MemAlloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  // cuLaunchKernel(f, grid x y z, block x y z, shared bytes, stream, params,
  // extra).
  CUresult (*LaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;

 private:
  CudaDriver() = default;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DriverGetVersion)(int*) = nullptr;
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(int*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, int) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, int) = nullptr;
  CUresult (*DeviceTotalMem)(std::size_t*, int) = nullptr;
  CUresult (*CtxGetDevice)(int*) = nullptr;

  [[nodiscard]] kcache::Result<std::string> describe(int device) const;
};

}  // namespace kcache_demo
