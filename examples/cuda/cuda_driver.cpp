#include "cuda_driver.h"

#include <dlfcn.h>

#include <utility>

namespace kcache_demo {
namespace {

constexpr CUresult kSuccess = 0;
// CUdevice_attribute values (cuda.h).
constexpr int kMultiprocessorCount = 16;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;

template <class Function>
bool bind(void* library, const char* symbol, Function*& out, std::string& missing) {
  out = reinterpret_cast<Function*>(dlsym(library, symbol));
  if (out == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return out != nullptr;
}

}  // namespace

kcache::Result<std::unique_ptr<CudaDriver>> CudaDriver::load() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return kcache::Status::unavailable(
        "no CUDA driver: cannot load libcuda.so.1 (" + std::string(why ? why : "not found") +
        "); the NVIDIA driver and a GPU are needed to run the kernels");
  }
  // Never dlclose'd: contexts (the loader's, the primary one) outlive this
  // object, and the driver cannot be unloaded under them.
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  std::string missing;
  bind(library, "cuInit", driver->Init, missing);
  bind(library, "cuDriverGetVersion", driver->DriverGetVersion, missing);
  bind(library, "cuGetErrorName", driver->GetErrorName, missing);
  bind(library, "cuGetErrorString", driver->GetErrorString, missing);
  bind(library, "cuDeviceGetCount", driver->DeviceGetCount, missing);
  bind(library, "cuDeviceGet", driver->DeviceGet, missing);
  bind(library, "cuDeviceGetName", driver->DeviceGetName, missing);
  bind(library, "cuDeviceGetAttribute", driver->DeviceGetAttribute, missing);
  bind(library, "cuDeviceTotalMem_v2", driver->DeviceTotalMem, missing);
  bind(library, "cuCtxGetDevice", driver->CtxGetDevice, missing);
  bind(library, "cuMemAlloc_v2", driver->MemAlloc, missing);
  bind(library, "cuMemFree_v2", driver->MemFree, missing);
  bind(library, "cuMemcpyHtoD_v2", driver->MemcpyHtoD, missing);
  bind(library, "cuMemcpyDtoH_v2", driver->MemcpyDtoH, missing);
  bind(library, "cuMemsetD8_v2", driver->MemsetD8, missing);
  bind(library, "cuLaunchKernel", driver->LaunchKernel, missing);
  bind(library, "cuCtxSynchronize", driver->CtxSynchronize, missing);
  if (!missing.empty()) {
    return kcache::Status::unavailable("libcuda.so.1 lacks " + missing +
                                       " (a driver too old for this demo?)");
  }
  if (kcache::Status init = driver->check(driver->Init(0), "cuInit"); !init.is_ok()) {
    return kcache::Status::unavailable("no usable GPU: " + init.message());
  }
  return driver;
}

kcache::Status CudaDriver::check(CUresult rc, const char* call) const {
  if (rc == kSuccess) return kcache::Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (GetErrorName == nullptr || GetErrorName(rc, &name) != kSuccess) name = nullptr;
  if (GetErrorString == nullptr || GetErrorString(rc, &text) != kSuccess) text = nullptr;
  std::string message =
      std::string(call) + ": " + (name ? std::string(name) : "CUDA error " + std::to_string(rc));
  if (text != nullptr) message += " (" + std::string(text) + ")";
  return kcache::Status::unavailable(std::move(message));
}

kcache::Result<std::string> CudaDriver::describe(int device) const {
  char name[256] = {};
  int major = 0;
  int minor = 0;
  int units = 0;
  std::size_t bytes = 0;
  for (const auto& [rc, call] :
       {std::pair{DeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName"},
        std::pair{DeviceGetAttribute(&major, kComputeCapabilityMajor, device),
                  "cuDeviceGetAttribute"},
        std::pair{DeviceGetAttribute(&minor, kComputeCapabilityMinor, device),
                  "cuDeviceGetAttribute"},
        std::pair{DeviceGetAttribute(&units, kMultiprocessorCount, device), "cuDeviceGetAttribute"},
        std::pair{DeviceTotalMem(&bytes, device), "cuDeviceTotalMem"}}) {
    if (kcache::Status status = check(rc, call); !status.is_ok()) return status;
  }
  return std::string(name) + ", sm_" + std::to_string(major * 10 + minor) + ", " +
         std::to_string(units) + " SMs, " + std::to_string(bytes >> 20) + " MiB";
}

kcache::Result<std::vector<std::string>> CudaDriver::list_devices() const {
  int count = 0;
  if (kcache::Status status = check(DeviceGetCount(&count), "cuDeviceGetCount"); !status.is_ok()) {
    return status;
  }
  std::vector<std::string> lines;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    if (kcache::Status status = check(DeviceGet(&device, ordinal), "cuDeviceGet");
        !status.is_ok()) {
      return status;
    }
    auto description = describe(device);
    if (!description) return description.status();
    lines.push_back("device " + std::to_string(ordinal) + ": " + *description);
  }
  return lines;
}

kcache::Result<std::string> CudaDriver::current_device() const {
  int device = 0;
  if (kcache::Status status = check(CtxGetDevice(&device), "cuCtxGetDevice"); !status.is_ok()) {
    return status;
  }
  return describe(device);
}

std::string CudaDriver::version() const {
  int version = 0;
  if (DriverGetVersion(&version) != kSuccess) return "CUDA driver (version unknown)";
  return "CUDA driver " + std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

}  // namespace kcache_demo
