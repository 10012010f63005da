// The dlsym layer's NVRTC route (routes.h): a function found in a real
// NVRTC is answered with the same function of the stand-in of its version
// (the symbol version its functions carry: libnvrtc.so.13, .12, .11.2),
// after the stand-in is told to forward to that library (nvrtc_claim.h).
// A stand-in not preloaded is loaded here. Said once and left to the real
// library: an NVRTC of a version without a stand-in, a second file of one
// version while the first is served, one loaded into a namespace of its own.
// A preloaded stand-in found through the global scope answers only for an
// NVRTC of its version that the program has there (route_global_stand_in).
#include <dlfcn.h>
#include <limits.h>
#include <link.h>

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

// The symbol versions of stand-in `index`'s real libraries: its soname's,
// and the alternative build's (libnvrtc.alt.so.<N>, the same API).
std::array<std::string, 2> versions_of(std::size_t index) {
  const std::string soname = kNvrtcStandInSonames[index];
  return {soname, "libnvrtc.alt.so" + soname.substr(std::strlen("libnvrtc.so"))};
}

// The stand-in whose functions `lookup.found` is one of the real ones of:
// the symbol version of the function found.
std::optional<std::size_t> version_of(const Lookup& lookup) {
  for (std::size_t i = 0; i < kStandIns; ++i) {
    for (const std::string& version : versions_of(i)) {
      if (::dlvsym(lookup.handle, lookup.name, version.c_str()) == lookup.found) return i;
    }
  }
  return std::nullopt;
}

// The stand-in's handle: the preloaded one, or loaded now from beside this
// layer (local: the program's global scope is not changed). Kept open.
void* stand_in_handle(std::size_t index, std::string& problem) {
  return load_once(stand_ins[index].handle,
                   layer_folder() + "/" + kNvrtcStandInFolder + "/" + kNvrtcStandInSonames[index],
                   problem);
}

// `file` as the stand-in opens it: an absolute path (the loader keeps a
// relative one as given, which a later change of folder would break).
std::string absolute(const char* file) {
  if (file[0] == '/') return file;
  char resolved[PATH_MAX];
  return ::realpath(file, resolved) != nullptr ? std::string(resolved) : std::string(file);
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// What the program asked the loader to make global (dlopen with
// RTLD_GLOBAL): a stand-in's soname (the preloaded stand-in answers it), or
// the paths of NVRTCs (the first few).
std::array<std::atomic<bool>, kStandIns> global_by_soname;
std::array<std::atomic<const char*>, 16> global_paths;

// Whether a loaded object other than kcache's needs `soname` (DT_NEEDED):
// linked to NVRTC, it would have had the real one loaded beside it.
bool needed_by_program(const char* soname) {
  struct Search {
    const char* soname;
    bool found;
  } search{soname, false};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& wanted = *static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && of_kcache(info->dlpi_name)) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          const auto* dynamic =
              reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          const char* strings = nullptr;
          for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
            if (entry->d_tag != DT_STRTAB) continue;
            // The loader relocates the address in place where the section
            // is writable; where it is not (the vDSO), it is an offset.
            ElfW(Addr) address = entry->d_un.d_ptr;
            if (address < info->dlpi_addr) address += info->dlpi_addr;
            strings = reinterpret_cast<const char*>(address);
          }
          if (strings == nullptr) continue;
          for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
            if (entry->d_tag == DT_NEEDED &&
                std::strcmp(strings + entry->d_un.d_val, wanted.soname) == 0) {
              wanted.found = true;
              return 1;
            }
          }
        }
        return 0;
      },
      &search);
  return search.found;
}

// The NVRTC of stand-in `index`'s version that a program sees in its global
// scope: "" for the stand-in itself (opened by its soname RTLD_GLOBAL, or
// needed by a loaded object), the path of a real one opened RTLD_GLOBAL by
// its path; nullopt when there is none.
std::optional<std::string> global_library(std::size_t index) {
  if (global_by_soname[index].load(std::memory_order_acquire) ||
      needed_by_program(kNvrtcStandInSonames[index])) {
    return std::string();
  }
  for (const auto& slot : global_paths) {
    const char* path = slot.load(std::memory_order_acquire);
    if (path == nullptr) break;
    void* handle = ::dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    bool of_this_version = false;
    for (const std::string& version : versions_of(index)) {
      void* function = ::dlvsym(handle, "nvrtcVersion", version.c_str());
      Dl_info info{};
      of_this_version = of_this_version || (function != nullptr && ::dladdr(function, &info) != 0 &&
                                            same_file(info.dli_fname, path));
    }
    ::dlclose(handle);
    if (of_this_version) return std::string(path);
  }
  return std::nullopt;
}

}  // namespace

void note_dlopen(const char* file, int mode) {
  if (file == nullptr || (mode & RTLD_GLOBAL) == 0 || !base_name(file).starts_with("libnvrtc")) {
    return;
  }
  if (std::strchr(file, '/') == nullptr) {
    if (const auto index = stand_in_of(file)) {
      global_by_soname[*index].store(true, std::memory_order_release);
    }
    return;
  }
  const std::string path = absolute(file);
  for (auto& slot : global_paths) {
    const char* noted = slot.load(std::memory_order_acquire);
    if (noted == nullptr) {
      const char* copy = ::strdup(path.c_str());  // never freed, as the claims
      if (copy == nullptr) return;
      if (slot.compare_exchange_strong(noted, copy, std::memory_order_acq_rel)) return;
      std::free(const_cast<char*>(copy));
    }
    if (noted != nullptr && path == noted) return;
  }
}

std::optional<void*> route_global_stand_in(const Lookup& lookup) {
  const auto index = stand_in_of(std::string(base_name(lookup.file)).c_str());
  if (!index) return std::nullopt;
  if (const auto library = global_library(*index)) {
    // The stand-in forwards to the one the program made global.
    if (!library->empty()) claim(*index, library->c_str());
    return std::nullopt;
  }
  // Another version the program has there: its stand-in, preloaded and made
  // global too, or its real library, routed.
  for (std::size_t other = 0; other < kStandIns; ++other) {
    if (other == *index) continue;
    for (const std::string& version : versions_of(other)) {
      void* found = ::dlvsym(RTLD_DEFAULT, lookup.name, version.c_str());
      Dl_info info{};
      if (found == nullptr || ::dladdr(found, &info) == 0 || info.dli_fname == nullptr) continue;
      if (nvrtc_stand_in(info.dli_fname)) {
        if (const auto library = global_library(other)) {
          if (!library->empty()) claim(other, library->c_str());
          return found;
        }
        continue;
      }
      const Lookup real{RTLD_DEFAULT, lookup.name, found, info.dli_fname, false};
      return route_nvrtc(real).value_or(found);
    }
  }
  return not_found(lookup.name);  // none, as without the stand-ins
}

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
