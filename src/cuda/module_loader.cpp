// The CUDA loader (include/kcache/cuda.h): cache -> cuModuleLoadData ->
// cuModuleGetFunction, one module per (context, key) kept for the process.
//
// libcuda's few C declarations are written out here (stable driver ABI) so
// the library builds without the CUDA toolkit or a driver.
#include <kcache/cuda.h>

#include <kcache/advanced.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "env/dynamic_library.h"

namespace kcache::cuda {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct DriverApi {
  std::shared_ptr<DynamicLibrary> library;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*CtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;

  std::string error(CUresult rc) const {
    const char* text = nullptr;
    if (GetErrorString != nullptr) GetErrorString(rc, &text);
    return text ? std::string(text) : "CUDA error " + std::to_string(rc);
  }
};

Result<std::shared_ptr<const DriverApi>> load_driver() {
  auto library = DynamicLibrary::open({"libcuda.so.1", "libcuda.so"});
  if (!library) {
    return Status::unavailable("the CUDA loader needs the NVIDIA driver's libcuda.so.1: " +
                               library.status().message());
  }
  auto api = std::make_shared<DriverApi>();
  api->library = *library;
  const DynamicLibrary& lib = **library;
  for (Status s :
       {lib.bind("cuInit", api->Init), lib.bind("cuGetErrorString", api->GetErrorString),
        lib.bind("cuCtxGetCurrent", api->CtxGetCurrent),
        lib.bind("cuCtxSetCurrent", api->CtxSetCurrent),
        lib.bind("cuCtxGetDevice", api->CtxGetDevice), lib.bind("cuDeviceGet", api->DeviceGet),
        lib.bind("cuDeviceGetAttribute", api->DeviceGetAttribute),
        lib.bind("cuDevicePrimaryCtxRetain", api->DevicePrimaryCtxRetain),
        lib.bind("cuModuleLoadData", api->ModuleLoadData),
        lib.bind("cuModuleGetFunction", api->ModuleGetFunction),
        lib.bind("cuModuleUnload", api->ModuleUnload)}) {
    if (!s.is_ok()) return s;
  }
  if (CUresult rc = api->Init(0); rc != CUDA_SUCCESS) {
    return Status::unavailable("cuInit failed: " + api->error(rc) + " (is there a GPU?)");
  }
  return std::shared_ptr<const DriverApi>(api);
}

}  // namespace

class ModuleLoader::Impl {
 public:
  Impl(Cache& cache, Compiler& compiler, std::shared_ptr<const DriverApi> driver)
      : cache_(cache), compiler_(compiler), driver_(std::move(driver)) {}

  ~Impl() {
    // Modules are unloaded in their own contexts; a context already
    // destroyed by the program took its modules with it.
    CUcontext previous = nullptr;
    driver_->CtxGetCurrent(&previous);
    for (const auto& [where, kept] : modules_) {
      if (driver_->CtxSetCurrent(where.context) == CUDA_SUCCESS) driver_->ModuleUnload(kept.module);
    }
    for (const auto& [context, module] : unkeyed_) {
      if (driver_->CtxSetCurrent(context) == CUDA_SUCCESS) driver_->ModuleUnload(module);
    }
    driver_->CtxSetCurrent(previous);
  }

  Result<CUcontext> current_context() {
    CUcontext context = nullptr;
    if (CUresult rc = driver_->CtxGetCurrent(&context); rc != CUDA_SUCCESS) {
      return Status::unavailable("cuCtxGetCurrent: " + driver_->error(rc));
    }
    if (context != nullptr) return context;
    CUdevice device = 0;
    CUresult rc = driver_->DeviceGet(&device, 0);
    if (rc == CUDA_SUCCESS) rc = driver_->DevicePrimaryCtxRetain(&context, device);
    if (rc == CUDA_SUCCESS) rc = driver_->CtxSetCurrent(context);
    if (rc != CUDA_SUCCESS) {
      return Status::unavailable(
          "no current CUDA context, and device 0's primary context is "
          "unusable: " +
          driver_->error(rc));
    }
    return context;
  }

  Result<Target> current_target() {
    auto context = current_context();
    if (!context) return context.status();
    return target_of(*context);
  }

  // The target of `context`'s device, which must be current.
  Result<Target> target_of(CUcontext context) {
    {
      MutexLock lock(mutex_);
      if (auto it = targets_.find(context); it != targets_.end()) return it->second;
    }
    CUdevice device = 0;
    int major = 0;
    int minor = 0;
    int units = 0;
    CUresult rc = driver_->CtxGetDevice(&device);
    if (rc == CUDA_SUCCESS) {
      rc =
          driver_->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    }
    if (rc == CUDA_SUCCESS) {
      rc =
          driver_->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    }
    if (rc == CUDA_SUCCESS) {
      rc = driver_->DeviceGetAttribute(&units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    }
    if (rc != CUDA_SUCCESS) return Status::unavailable("device attributes: " + driver_->error(rc));
    Target target{"sm_" + std::to_string(major * 10 + minor), "", units};
    MutexLock lock(mutex_);
    targets_[context] = target;  // a context's device never changes
    return target;
  }

  Result<LoadedKernel> get_function(const KernelRequest& request, std::string_view kernel) {
    auto context = current_context();
    if (!context) return context.status();
    // The device's target when the request names none; the request itself
    // is not copied (this runs on every request).
    Result<Target> device = request.target;
    if (request.target.empty()) {
      device = target_of(*context);
      if (!device) return device.status();
    }
    // The key first: a module this loader has already is used as it is.
    AdvancedCache expert(cache_);
    auto prepared = expert.prepare(request, *device, compiler_);
    if (!prepared) return prepared.status();
    if (prepared->keyed()) {
      ReleasableMutexLock lock(mutex_);
      if (auto it = modules_.find(Where{*context, prepared->key()}); it != modules_.end()) {
        LoadedKernel loaded;
        loaded.context = *context;
        loaded.key = prepared->key();
        loaded.tier = TierKind::kMemory;
        loaded.lowered_name = it->second.names.lowered_name(kernel);
        CUmodule module = it->second.module;
        lock.release();
        return with_function(std::move(loaded), module, kernel);
      }
    }
    // The loaded module is what this loader keeps, so the cache need not
    // keep the bytes in memory too. A request kcache cannot key (a header
    // on disk that cannot be read, an option naming files it does not
    // model) is compiled without the cache, and its module is not kept
    // for reuse.
    auto fetch = [&] {
      return expert.get_or_compile(*prepared, compiler_, {.keep_in_memory = false});
    };
    auto cached = fetch();
    if (!cached) return cached.status();

    LoadedKernel loaded;
    loaded.context = *context;
    loaded.key = cached->key;
    loaded.tier = cached->tier;
    loaded.lowered_name = cached->lowered_name(kernel);
    CUmodule module = nullptr;
    CUresult rc = driver_->ModuleLoadData(&module, cached->binary().data());
    if (rc != CUDA_SUCCESS && cached->tier != TierKind::kCompiled) {
      // A stored binary the driver refuses (one built for another driver, a
      // damaged package): evicted, compiled again, never returned again.
      expert.reject(*cached, "cuModuleLoadData: " + driver_->error(rc));
      cached = fetch();
      if (!cached) return cached.status();
      loaded.key = cached->key;
      loaded.tier = cached->tier;
      loaded.lowered_name = cached->lowered_name(kernel);
      rc = driver_->ModuleLoadData(&module, cached->binary().data());
    }
    if (rc != CUDA_SUCCESS) {
      return Status::unavailable("cuModuleLoadData rejected the " +
                                 cached->metadata(kFormatField).value_or("binary") + " for " +
                                 cached->target.to_string() + ": " + driver_->error(rc));
    }
    try {
      MutexLock lock(mutex_);
      if (!prepared->keyed()) {
        unkeyed_.push_back({*context, module});
      } else {
        Module kept{module, {}};
        kept.names.metadata_fields = std::move(cached->metadata_fields);
        auto [it, inserted] =
            modules_.try_emplace(Where{*context, prepared->key()}, std::move(kept));
        if (!inserted) {  // another thread loaded it meanwhile: keep one
          driver_->ModuleUnload(module);
          module = it->second.module;
          loaded.tier = TierKind::kMemory;
        }
      }
    } catch (...) {  // out of memory: the module is not leaked
      driver_->ModuleUnload(module);
      throw;
    }
    return with_function(std::move(loaded), module, kernel);
  }

 private:
  // A loaded module and the metadata that lowers kernel names in it.
  struct Module {
    CUmodule module;
    CachedKernel names;  // metadata alone: the binary is not kept
  };

  Result<LoadedKernel> with_function(LoadedKernel loaded, CUmodule module,
                                     std::string_view kernel) {
    CUfunction function = nullptr;
    if (CUresult rc = driver_->ModuleGetFunction(&function, module, loaded.lowered_name.c_str());
        rc != CUDA_SUCCESS) {
      return Status::not_found("the module has no kernel '" + std::string(kernel) +
                               "' (looked up " + loaded.lowered_name + "): " + driver_->error(rc));
    }
    loaded.module = module;
    loaded.function = function;
    return loaded;
  }

  Cache& cache_;
  Compiler& compiler_;
  std::shared_ptr<const DriverApi> driver_;
  Mutex mutex_;
  // Found by key alone (XXH3-128): the key material was compared in full
  // when the binary was read; within one process, two requests would have
  // to collide on 128 bits. Hashed: a first use inserts, and a tree's
  // node walk and comparisons were a tenth of a first use's bookkeeping.
  struct Where {
    CUcontext context;
    CacheKey key;
    bool operator==(const Where&) const = default;
  };
  struct WhereHash {
    std::size_t operator()(const Where& w) const noexcept {
      return std::hash<CacheKey>()(w.key) ^ std::hash<const void*>()(w.context);
    }
  };
  std::unordered_map<Where, Module, WhereHash> modules_ GUARDED_BY(mutex_);
  std::vector<std::pair<CUcontext, CUmodule>> unkeyed_
      GUARDED_BY(mutex_);  // unloaded with the loader
  std::map<CUcontext, Target> targets_ GUARDED_BY(mutex_);
};

ModuleLoader::ModuleLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ModuleLoader::~ModuleLoader() = default;

Result<std::unique_ptr<ModuleLoader>> ModuleLoader::create(Cache& cache, Compiler& compiler) {
  static std::mutex mutex;
  static std::shared_ptr<const DriverApi> driver;
  {
    std::lock_guard lock(mutex);
    if (!driver) {
      auto loaded = load_driver();
      if (!loaded) return loaded.status();
      driver = *loaded;
    }
  }
  return std::unique_ptr<ModuleLoader>(
      new ModuleLoader(std::make_unique<Impl>(cache, compiler, driver)));
}

Result<Target> ModuleLoader::current_target() { return impl_->current_target(); }

Result<LoadedKernel> ModuleLoader::get_function(const KernelRequest& request,
                                                std::string_view kernel) {
  return impl_->get_function(request, kernel);
}

}  // namespace kcache::cuda
