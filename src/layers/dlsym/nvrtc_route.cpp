// The dlsym layer's NVRTC route (routes.h): a function found in a real
// NVRTC is answered with the same function of the stand-in of its version
// (the symbol version its functions carry: libnvrtc.so.13, .12, .11.2),
// after the stand-in is told to forward to that library (nvrtc_claim.h).
// A stand-in not preloaded is loaded here. Said once and left to the real
// library: an NVRTC of a version without a stand-in, a second file of one
// version while the first is served, one loaded into a namespace of its own.
#include <dlfcn.h>
#include <limits.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "layers/dlsym/routes.h"
#include "layers/layer_files.h"
#include "layers/nvrtc/nvrtc_claim.h"
#include "layers/same_file.h"

namespace kcache::layer {
namespace {

// A stand-in, the library it serves (claimed, never freed) and its handle
// once this layer has opened it.
struct StandIn {
  std::atomic<const char*> claimed{nullptr};
  std::atomic<void*> handle{nullptr};
};

constexpr std::size_t kStandIns = std::size(kNvrtcStandInSonames);
std::array<StandIn, kStandIns> stand_ins;

std::optional<std::size_t> stand_in_of(const char* soname) {
  for (std::size_t i = 0; i < kStandIns; ++i) {
    if (soname != nullptr && std::strcmp(soname, kNvrtcStandInSonames[i]) == 0) return i;
  }
  return std::nullopt;
}

const char* claim(std::size_t index, const char* proposed) {
  std::atomic<const char*>& slot = stand_ins[index].claimed;
  const char* current = slot.load(std::memory_order_acquire);
  if (current != nullptr || proposed == nullptr) return current;
  const char* copy = ::strdup(proposed);
  if (copy == nullptr) return nullptr;
  if (slot.compare_exchange_strong(current, copy, std::memory_order_acq_rel)) return copy;
  std::free(const_cast<char*>(copy));
  return current;
}

// The stand-in whose functions `lookup.found` is one of the real ones of:
// the symbol version of the function found. The alternative build of a
// version (libnvrtc.alt.so.<N>, the same API) has a version of its own.
std::optional<std::size_t> version_of(const Lookup& lookup) {
  for (std::size_t i = 0; i < kStandIns; ++i) {
    const std::string soname = kNvrtcStandInSonames[i];
    const std::string alternative = "libnvrtc.alt.so" + soname.substr(std::strlen("libnvrtc.so"));
    for (const std::string& version : {soname, alternative}) {
      if (::dlvsym(lookup.handle, lookup.name, version.c_str()) == lookup.found) return i;
    }
  }
  return std::nullopt;
}

// The stand-in's handle: the preloaded one, or loaded now from beside this
// layer (local: the program's global scope is not changed). Kept open.
void* stand_in_handle(std::size_t index, std::string& problem) {
  std::atomic<void*>& slot = stand_ins[index].handle;
  if (void* handle = slot.load(std::memory_order_acquire)) return handle;
  const std::string path =
      layer_folder() + "/" + kNvrtcStandInFolder + "/" + kNvrtcStandInSonames[index];
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    problem = error != nullptr ? error : path + " cannot be loaded";
    return nullptr;
  }
  void* none = nullptr;
  if (!slot.compare_exchange_strong(none, handle, std::memory_order_acq_rel)) {
    ::dlclose(handle);  // another thread's open of the same object is kept
    return none;
  }
  return handle;
}

// `file` as the stand-in opens it: an absolute path (the loader keeps a
// relative one as given, which a later change of folder would break).
std::string absolute(const char* file) {
  if (file[0] == '/') return file;
  char resolved[PATH_MAX];
  return ::realpath(file, resolved) != nullptr ? std::string(resolved) : std::string(file);
}

}  // namespace

std::optional<void*> route_nvrtc(const Lookup& lookup) {
  const auto index = version_of(lookup);
  const std::string file = absolute(lookup.file);
  if (!index) {
    const std::string_view name = std::string_view(file).substr(file.rfind('/') + 1);
    if (name.starts_with("libnvrtc")) {
      warn_once("nvrtc version " + file,
                "NVRTC calls through " + file +
                    " are not cached: kcache has no stand-in for its version (it has them for "
                    "libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so.11.2)");
    }
    return std::nullopt;
  }
  const char* soname = kNvrtcStandInSonames[*index];
  if (lookup.other_namespace) {
    warn_once("nvrtc namespace " + file,
              "NVRTC calls through " + file +
                  " are not cached: it was loaded into a link namespace of its own (dlmopen), "
                  "where kcache's stand-in is not");
    return std::nullopt;
  }
  const char* served = claim(*index, file.c_str());
  if (!same_file(served, file.c_str())) {
    warn_once("nvrtc second " + file,
              "NVRTC calls through " + file + " are not cached: this process's " + soname +
                  " calls are served through " + (served != nullptr ? served : "another") +
                  ", and kcache serves one library of a version in a process");
    return std::nullopt;
  }
  std::string problem;
  void* stand_in = stand_in_handle(*index, problem);
  if (stand_in == nullptr) {
    warn_once("nvrtc stand-in " + std::string(soname),
              "NVRTC calls through " + file + " are not cached: kcache's stand-in for " + soname +
                  " cannot be loaded (" + problem + ")");
    return std::nullopt;
  }
  // A function the stand-in lacks (an NVRTC newer than it) is not found,
  // as for a program that opens the stand-in by its soname: a real function
  // handed a stand-in's program would read it as its own.
  return next_dlsym(stand_in, lookup.name);
}

}  // namespace kcache::layer

extern "C" __attribute__((visibility("default"))) const char* kcache_dlsym_layer_claim_nvrtc(
    const char* soname, const char* proposed) {
  const auto index = kcache::layer::stand_in_of(soname);
  return index ? kcache::layer::claim(*index, proposed) : nullptr;
}
static_assert(std::is_same_v<decltype(&kcache_dlsym_layer_claim_nvrtc), kcache::layer::ClaimNvrtc>);
