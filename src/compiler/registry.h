// Factories of the built-in backends; make_compiler (compiler.h,
// src/core/compiler_factory.cpp) dispatches to them by name, with
// CompilerConfig::facts_dir filled in.
#pragma once

#include <kcache/compiler.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kcache {

Result<std::unique_ptr<Compiler>> make_opencl_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_command_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_nvrtc_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_hip_compiler(const CompilerConfig& config);

// The files a command line runs or reads by name: its program and the
// compiler a wrapper such as ccache runs, as the shell finds them, and
// every other word naming a regular file (a script given to `sh`).
// Relative paths stay relative (to the folder the command runs in).
std::vector<std::string> command_files(const std::string& command);

// target_misfit (compiler.h) of each backend that has one.
std::optional<std::string> nvrtc_target_misfit(const Target& target);
std::optional<std::string> hip_target_misfit(const Target& target);

}  // namespace kcache
