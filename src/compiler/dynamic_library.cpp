#include "compiler/dynamic_library.h"

#include <dlfcn.h>

namespace kcache {

Result<std::shared_ptr<DynamicLibrary>> DynamicLibrary::open(
    std::initializer_list<const char*> names) {
  std::string tried;
  for (const char* name : names) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      return std::shared_ptr<DynamicLibrary>(new DynamicLibrary(handle, name));
    }
    const char* error = ::dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (error ? error : name);
  }
  return Status::unavailable("cannot load " + std::string(*names.begin()) + " (" + tried + ")");
}

// Vendor runtimes are never unloaded: they start threads and register
// atexit handlers (PoCL, the CUDA driver), and unloading them under a
// running program is a known source of crashes at exit.
DynamicLibrary::~DynamicLibrary() = default;

void* DynamicLibrary::find(const char* symbol) const { return ::dlsym(handle_, symbol); }

}  // namespace kcache
