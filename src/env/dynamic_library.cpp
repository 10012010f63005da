#include "env/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

namespace kcache {

Result<std::shared_ptr<DynamicLibrary>> DynamicLibrary::open(
    const std::vector<std::string>& names) {
  std::string tried;
  for (const auto& name : names) {
    if (void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return std::shared_ptr<DynamicLibrary>(new DynamicLibrary(handle, name));
    }
    const char* error = ::dlerror();
    tried += (tried.empty() ? "" : "; ") + (error ? std::string(error) : name);
  }
  return Status::unavailable("cannot load " + (names.empty() ? std::string("?") : names.front()) +
                             " (" + tried + ")");
}

std::string DynamicLibrary::path() const {
  struct link_map* map = nullptr;
  if (::dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return name_;
}

// Vendor runtimes are never unloaded: they start threads and register
// atexit handlers (PoCL, the CUDA driver), and unloading them under a
// running program is a known source of crashes at exit.
DynamicLibrary::~DynamicLibrary() = default;

void* DynamicLibrary::find(const char* symbol) const { return ::dlsym(handle_, symbol); }

}  // namespace kcache
