// Finding and opening the real libnvrtc for the NVRTC shim's stand-in
// (docs/design.md §10.2): never by its soname, which is the stand-in's.
#include "layers/nvrtc/real_nvrtc.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/setting_variables.h"
#include "compiler/vendor_library.h"
#include "layers/nvrtc/nvrtc_claim.h"
#include "layers/same_file.h"

#ifndef KCACHE_NVRTC_SONAME
#error "KCACHE_NVRTC_SONAME names the library this stand-in is (e.g. libnvrtc.so.13)"
#endif

namespace kcache::layer {
namespace {

// This library's own file, told apart from the real one by inode.
bool is_this_library(const std::string& path) {
  Dl_info info{};
  return ::dladdr(reinterpret_cast<void*>(&is_this_library), &info) != 0 &&
         same_file(info.dli_fname, path.c_str());
}

// The files the loader's cache lists for the soname (`ldconfig -p`), for
// this process's word size. Asking the loader itself (dlmopen in a fresh
// namespace) would map and initialise a second copy of NVRTC in the
// program, which has crashed NVRTC 13 under AddressSanitizer.
std::vector<std::string> loader_cache_entries() {
  std::vector<std::string> paths;
  const char* ldconfig = ::access("/sbin/ldconfig", X_OK) == 0       ? "/sbin/ldconfig"
                         : ::access("/usr/sbin/ldconfig", X_OK) == 0 ? "/usr/sbin/ldconfig"
                                                                     : nullptr;
  if (ldconfig == nullptr) return paths;
  FILE* listing = ::popen((std::string(ldconfig) + " -p 2>/dev/null").c_str(), "r");
  if (listing == nullptr) return paths;
  const std::string name = std::string(KCACHE_NVRTC_SONAME) + " (";
  char line[4096];
  while (std::fgets(line, sizeof line, listing) != nullptr) {
    std::string_view text(line);
    while (!text.empty() && (text.front() == '\t' || text.front() == ' ')) text.remove_prefix(1);
    const std::size_t arrow = text.find(" => ");
    if (!text.starts_with(name) || arrow == std::string_view::npos) continue;
    const bool wide = text.substr(0, arrow).find("64") != std::string_view::npos;
    if (wide != (sizeof(void*) == 8)) continue;
    std::string path(text.substr(arrow + 4));
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    paths.push_back(std::move(path));
  }
  ::pclose(listing);
  return paths;
}

std::atomic<const void*> first_caller{nullptr};

// The loader's default folders, searched after its cache.
constexpr const char* kDefaultFolders[] = {"/lib/x86_64-linux-gnu",
                                           "/usr/lib/x86_64-linux-gnu",
                                           "/lib64",
                                           "/usr/lib64",
                                           "/lib",
                                           "/usr/lib"};

// The folders the loader searches for a library that the object holding
// `caller` opens by soname, up to its cache: the object's RPATH (and its
// loaders'), LD_LIBRARY_PATH, its RUNPATH, in that order (glibc's
// RTLD_DI_SERINFO, less the default folders it lists last: the loader's
// cache comes before those). A program that finds NVRTC through its own
// RUNPATH (CuPy in a virtual environment: pip's nvidia/cu13/lib) gets that
// NVRTC behind the stand-in too.
std::vector<std::string> caller_folders(const void* caller) {
  std::vector<std::string> folders;
  Dl_info info{};
  link_map* map = nullptr;
  if (caller == nullptr ||
      ::dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    return folders;
  }
  Dl_serinfo size{};
  if (::dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) {
    return folders;
  }
  std::vector<std::max_align_t> storage(size.dls_size / sizeof(std::max_align_t) + 1);
  auto* paths = reinterpret_cast<Dl_serinfo*>(storage.data());
  if (::dlinfo(map, RTLD_DI_SERINFOSIZE, paths) != 0 ||
      ::dlinfo(map, RTLD_DI_SERINFO, paths) != 0) {
    return folders;
  }
  for (unsigned i = 0; i < paths->dls_cnt; ++i) {
    const Dl_serpath& path = paths->dls_serpath[i];
    if (path.dls_name == nullptr || *path.dls_name == '\0') continue;
    std::string_view name(path.dls_name);
    if (name.size() > 1 && name.back() == '/') name.remove_suffix(1);
    const bool system = std::any_of(std::begin(kDefaultFolders), std::end(kDefaultFolders),
                                    [&](std::string_view folder) { return name == folder; });
    if (!system) folders.emplace_back(name);
  }
  return folders;
}

// Where the real library may be, in the loader's order: KCACHE_NVRTC_LIBRARY
// (the nvrtc_library setting, read here from the program's environment;
// a path only: a soname would find this stand-in), the first caller's
// search path, the folders of LD_LIBRARY_PATH; then (`searched`, which
// runs ldconfig) the loader's cache, its default folders and the CUDA
// toolkit's folders.
std::vector<std::string> real_candidates(bool searched) {
  std::vector<std::string> paths;
  if (!searched) {
    if (const char* named = std::getenv(kNvrtcLibraryVariable);
        named && std::strchr(named, '/') != nullptr) {
      paths.emplace_back(named);
    }
    for (const auto& folder : caller_folders(first_caller.load(std::memory_order_acquire))) {
      paths.push_back(folder + "/" + KCACHE_NVRTC_SONAME);
    }
    for (const auto& folder : loader_path_folders()) {
      paths.push_back(folder + "/" + KCACHE_NVRTC_SONAME);
    }
    return paths;
  }
  paths = loader_cache_entries();
  for (const char* dir : kDefaultFolders) {
    paths.push_back(std::string(dir) + "/" + KCACHE_NVRTC_SONAME);
  }
  for (const auto& folder : toolkit_library_folders(kCudaToolkit)) {
    paths.push_back(folder + "/" + KCACHE_NVRTC_SONAME);
  }
  return paths;
}

// The real library at `path`, opened; nullptr when it is not one (this
// stand-in, no file, not an NVRTC).
const Real* open_real(const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0 || is_this_library(path)) return nullptr;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  auto* r = new Real;  // never deleted: programs outlive static destructors
  r->path = path;
  // Every function it has; one a program calls that it lacks is failed then.
  (void)bind_nvrtc_functions(*r, [&](const char* symbol) { return ::dlsym(handle, symbol); });
  r->CPEx = ::dlsym(handle, "__nvrtcCPEx");
  if (r->CreateProgram && r->CompileProgram && r->DestroyProgram) return r;
  delete r;
  return nullptr;
}

// The real library found by the search above (real_candidates).
const Real* searched_real() {
  for (const bool searched : {false, true}) {
    for (const auto& path : real_candidates(searched)) {
      if (const Real* r = open_real(path)) return r;
    }
  }
  return nullptr;
}

}  // namespace

void note_caller(const void* return_address) {
  if (first_caller.load(std::memory_order_relaxed) != nullptr) return;
  const void* none = nullptr;
  first_caller.compare_exchange_strong(none, return_address, std::memory_order_acq_rel);
}

const Real* real() {
  static const Real* const loaded = []() -> const Real* {
    // The library a program opened and looked up through the dlsym layer
    // (nvrtc_claim.h) is the one served; else the search's, claimed, so
    // that the layer serves no other of this version.
    const auto claim = reinterpret_cast<ClaimNvrtc>(::dlsym(RTLD_DEFAULT, kClaimNvrtcSymbol));
    if (claim != nullptr) {
      if (const char* named = claim(KCACHE_NVRTC_SONAME, nullptr)) {
        if (const Real* r = open_real(named)) return r;
      }
    }
    const Real* r = searched_real();
    if (r != nullptr && claim != nullptr) {
      const char* served = claim(KCACHE_NVRTC_SONAME, r->path.c_str());
      if (!same_file(served, r->path.c_str())) {
        // Claimed by a program's lookup since it was asked above.
        if (const Real* named = open_real(served)) return named;
      }
    }
    if (r != nullptr) return r;
    std::fprintf(stderr,
                 "kcache: Error [Layer] the NVRTC shim finds no real %s (%s, "
                 "LD_LIBRARY_PATH, the loader's folders, $CUDA_HOME/lib64): every NVRTC call "
                 "fails\n",
                 KCACHE_NVRTC_SONAME, kNvrtcLibraryVariable);
    return nullptr;
  }();
  return loaded;
}

}  // namespace kcache::layer
