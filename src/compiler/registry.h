// Factories of the built-in backends; make_compiler (compiler.h,
// src/core/compiler_factory.cpp) dispatches to them by name, with
// CompilerConfig::facts_dir filled in and their settings resolved.
#pragma once

#include <kcache/compiler.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kcache {

// What the backends that load a vendor library take from kcache's settings
// table (src/core/config.cpp), resolved by make_compiler: no backend reads
// a KCACHE_* variable itself. Empty: not set. A library the program names
// (CompilerConfig::nvrtc_library, hip_library) comes before its setting.
struct BackendSettings {
  std::string nvrtc_library{};  // KCACHE_NVRTC_LIBRARY
  std::string hip_library{};    // KCACHE_HIP_LIBRARY
  std::string hip_worker{};     // KCACHE_HIP_WORKER
};

Result<std::unique_ptr<Compiler>> make_opencl_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_command_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_nvrtc_compiler(const CompilerConfig& config,
                                                      const BackendSettings& settings);
Result<std::unique_ptr<Compiler>> make_hip_compiler(const CompilerConfig& config,
                                                    const BackendSettings& settings);

// The files a command line runs or reads by name: its program and the
// compiler a wrapper such as ccache runs, as the shell finds them, and
// every other word naming a regular file (a script given to `sh`).
// Relative paths stay relative (to the folder the command runs in).
std::vector<std::string> command_files(const std::string& command);

// target_misfit (compiler.h) of each backend that has one.
std::optional<std::string> nvrtc_target_misfit(const Target& target);
std::optional<std::string> hip_target_misfit(const Target& target);

}  // namespace kcache
