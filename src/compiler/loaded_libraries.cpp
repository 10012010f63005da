#include "compiler/loaded_libraries.h"

#include <link.h>

#include <algorithm>
#include <filesystem>

namespace kcache {

std::vector<std::string> loaded_libraries() {
  std::vector<std::string> paths;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
          static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &paths);
  for (auto& path : paths) {
    std::error_code error;
    auto canonical = std::filesystem::canonical(path, error);
    if (!error) path = canonical.string();
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

}  // namespace kcache
