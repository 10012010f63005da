// The trust rule of include/kcache/trust.h, over the real file system.
#include <kcache/trust.h>

#include <filesystem>

#include "compiler/registry.h"
#include "env/env.h"
#include "env/trusted_path.h"

namespace kcache {

std::optional<std::string> untrusted_file_reason(const std::string& path) {
  std::string real;
  return untrusted_appended_file_reason(path, Env::posix(), real);
}

std::vector<std::string> files_a_compiler_runs(const CompilerConfig& config) {
  std::vector<std::string> files;
  if (config.backend == "command") {
    files = command_files(config.command);
  } else if (config.backend == "nvrtc" || config.backend == "hip") {
    // A soname is found by the loader's search, in folders the system's.
    const std::string& library =
        config.backend == "nvrtc" ? config.nvrtc_library : config.hip_library;
    if (library.find('/') != std::string::npos) files.push_back(library);
  }
  for (std::string& file : files) {
    std::error_code error;
    auto absolute = std::filesystem::absolute(file, error);
    if (!error) file = absolute.lexically_normal().string();
  }
  return files;
}

}  // namespace kcache
