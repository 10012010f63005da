#include "compiler/registry.h"

#include "build_config.h"

namespace kcache {

std::vector<std::string> compiler_backends() {
  std::vector<std::string> names;
#if KCACHE_WITH_OPENCL
  names.push_back("opencl");
#endif
  names.push_back("nvrtc");
  names.push_back("hip");
  names.push_back("command");
  return names;
}

Result<std::unique_ptr<Compiler>> make_compiler(const CompilerConfig& config) {
#if KCACHE_WITH_OPENCL
  if (config.backend == "opencl") return make_opencl_compiler(config);
#endif
  if (config.backend == "nvrtc") return make_nvrtc_compiler(config);
  if (config.backend == "hip") return make_hip_compiler(config);
  if (config.backend == "command") return make_command_compiler(config);
  std::string known;
  for (const auto& name : compiler_backends()) known += (known.empty() ? "" : ", ") + name;
  return Status::invalid_argument("unknown backend '" + config.backend + "' (known: " + known +
                                  ")");
}

}  // namespace kcache
