// make_compiler: the built-in backends by name. It lives above the
// backends because it completes their config from kcache's settings: the
// folder where a backend keeps what it learned about its compiler
// (compiler_facts.h) is in the user cache, <cache dir>/<version>/compilers,
// and the vendor library and helper program a setting names
// (BackendSettings) are the table's rows, not read by the backends.
#include <kcache/compiler.h>

#include "build_config.h"
#include "compiler/registry.h"
#include "core/config.h"

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

Result<std::unique_ptr<Compiler>> make_compiler(const CompilerConfig& given) {
  CompilerConfig config = given;
  // Only the backends that load a vendor library keep records (resolving
  // the settings costs a command's hit a few tens of microseconds).
  const bool keeps_records = config.backend == "nvrtc";
  if (config.facts_dir.empty() && keeps_records) {
    // No warnings here: the cache that uses this compiler reports them.
    const ResolvedConfig settings = resolve_config(CacheOptions{}, Env::posix());
    if (settings.enabled && !settings.user_dir.empty()) {
      config.facts_dir = settings.user_dir + "/compilers";
    }
  } else if (config.facts_dir == "-") {
    config.facts_dir.clear();  // no records
  }
#if KCACHE_WITH_OPENCL
  if (config.backend == "opencl") return make_opencl_compiler(config);
#endif
  if (config.backend == "nvrtc" || config.backend == "hip") {
    const Env& env = Env::posix();
    BackendSettings settings;
    settings.nvrtc_library = setting_value("nvrtc_library", env);
    settings.hip_library = setting_value("hip_library", env);
    settings.hip_worker = setting_value("hip_worker", env);
    if (config.backend == "nvrtc") return make_nvrtc_compiler(config, settings);
    return make_hip_compiler(config, settings);
  }
  if (config.backend == "command") return make_command_compiler(config);
  std::string known;
  for (const auto& name : compiler_backends()) known += (known.empty() ? "" : ", ") + name;
  return Status::invalid_argument("unknown backend '" + config.backend + "' (known: " + known +
                                  ")");
}

std::optional<std::string> target_misfit(std::string_view backend, const Target& target) {
  if (backend == "nvrtc") return nvrtc_target_misfit(target);
  if (backend == "hip") return hip_target_misfit(target);
  return std::nullopt;
}

}  // namespace kcache
