// kcache CUDA loader: from a request to a function ready to launch.
//
// This is what a CUDA library calls instead of NVRTC + cuModuleLoadData: the
// binary comes from the cache (or is compiled once), is loaded into the
// current CUDA context, and the module is kept per context in memory, so a
// second request for it in the process costs a key derivation and a map
// lookup (it does not reach the cache, nor count in its stats). The loader
// keeps modules, not binaries: it asks the cache not to keep the bytes in
// its memory tier. A request that cannot be keyed (a header on disk that
// cannot be read: the cache warns once) is compiled and loaded on every
// call. Part of the optional library kcache::cuda (libkcache_cuda.so);
// libcuda is loaded at run time, so the library builds and links on
// machines without a GPU driver, and says so at create() time.
//
// Handles are CUDA driver types passed as void* so this header needs no
// CUDA headers: cast `function` to CUfunction, `module` to CUmodule.
#pragma once

#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/key.h>
#include <kcache/status.h>

#include <memory>
#include <string_view>

namespace kcache::cuda {

// A loaded kernel. The module and function belong to the loader: valid
// until the loader is destroyed (or their context is).
struct KCACHE_EXPORT LoadedKernel {
  void* function = nullptr;  // CUfunction
  void* module = nullptr;    // CUmodule
  void* context = nullptr;   // CUcontext the module lives in
  // Where the binary came from; kMemory when this loader had the module
  // already.
  TierKind tier = TierKind::kCompiled;
  CacheKey key{};
  std::string lowered_name{};  // the symbol that was looked up
};

// Thread-safe: any number of threads may call get_function at once; each
// uses its own current context.
class KCACHE_EXPORT ModuleLoader {
 public:
  // Loads libcuda (kUnavailable naming it when absent or when no driver
  // answers cuInit). `cache` and `compiler` (usually the "nvrtc" backend)
  // must outlive the loader.
  static Result<std::unique_ptr<ModuleLoader>> create(Cache& cache, Compiler& compiler);
  ~ModuleLoader();
  ModuleLoader(const ModuleLoader&) = delete;
  ModuleLoader& operator=(const ModuleLoader&) = delete;

  // The target of the current context's device, e.g. "sm_90_132". Without a
  // current context, device 0's primary context is made current first.
  [[nodiscard]] Result<Target> current_target();

  // Fetches `request` through the cache (its target defaults to
  // current_target()), loads it into the current context once, and returns
  // the function `kernel` (a name expression, lowered through the entry's
  // metadata). Errors: the compiler's, kNotFound when the module has no
  // such function, kUnavailable when the driver rejects the binary (its
  // message is kept).
  Result<LoadedKernel> get_function(const KernelRequest& request, std::string_view kernel);

  class Impl;

 private:
  explicit ModuleLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kcache::cuda
