// Factories of the built-in backends; make_compiler (compiler.h,
// src/core/compiler_factory.cpp) dispatches to them by name, with
// CompilerConfig::facts_dir filled in.
#pragma once

#include <kcache/compiler.h>

#include <memory>
#include <optional>
#include <string>

namespace kcache {

Result<std::unique_ptr<Compiler>> make_opencl_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_command_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_nvrtc_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_hip_compiler(const CompilerConfig& config);

// target_misfit (compiler.h) of each backend that has one.
std::optional<std::string> nvrtc_target_misfit(const Target& target);
std::optional<std::string> hip_target_misfit(const Target& target);

}  // namespace kcache
