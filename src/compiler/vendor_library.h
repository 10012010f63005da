// Where a vendor's runtime library (libnvrtc, libamdhip64) may be: the one
// search of the backends that load one and of the NVRTC shim, which looks
// for the real libnvrtc behind it the same way. Header-only: the shim
// links only libkcache's public ABI.
#pragma once

#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache {

// A vendor's toolkit as it is installed: the sonames of its library and the
// folders the library lies in under the toolkit's root.
struct VendorToolkit {
  std::span<const char* const> sonames;  // newest first
  // The variables that may name the root ("CUDA_HOME"), in order; then
  // the root of a default install.
  std::span<const char* const> root_variables;
  const char* default_root = "";
  const char* library_folder = "";  // under a root: "lib64"
};

// The toolkit's library folders, in order: <root>/<library_folder> for
// each root variable that is set (and not empty), then the default root's.
inline std::vector<std::string> toolkit_library_folders(const VendorToolkit& toolkit) {
  std::vector<std::string> roots;
  for (const char* variable : toolkit.root_variables) {
    if (const char* root = std::getenv(variable); root && *root) roots.emplace_back(root);
  }
  roots.emplace_back(toolkit.default_root);
  std::vector<std::string> folders;
  for (const auto& root : roots) folders.push_back(root + "/" + toolkit.library_folder);
  return folders;
}

// What to dlopen, in order. A library named (by the program, or by a
// setting such as KCACHE_NVRTC_LIBRARY) is the only one tried: no silent
// fallback to another toolkit. Otherwise each soname as the loader finds
// it (its search path), then each in each toolkit folder.
inline std::vector<std::string> vendor_library_candidates(const std::string& named,
                                                          const VendorToolkit& toolkit) {
  if (!named.empty()) return {named};
  std::vector<std::string> names(toolkit.sonames.begin(), toolkit.sonames.end());
  for (const auto& folder : toolkit_library_folders(toolkit)) {
    for (const char* soname : toolkit.sonames) names.push_back(folder + "/" + soname);
  }
  return names;
}

// The folders of LD_LIBRARY_PATH, in order, empty entries left out: where
// the loader looks for a soname before its cache.
inline std::vector<std::string> loader_path_folders() {
  std::vector<std::string> folders;
  const char* paths = std::getenv("LD_LIBRARY_PATH");
  std::string_view rest = paths ? paths : "";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    std::string folder(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (!folder.empty()) folders.push_back(std::move(folder));
  }
  return folders;
}

}  // namespace kcache
