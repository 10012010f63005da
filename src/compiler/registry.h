// Factories of the built-in backends; make_compiler (compiler.h,
// src/core/compiler_factory.cpp) dispatches to them by name, with
// CompilerConfig::facts_dir filled in.
#pragma once

#include <kcache/compiler.h>

#include <memory>

namespace kcache {

Result<std::unique_ptr<Compiler>> make_opencl_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_command_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_nvrtc_compiler(const CompilerConfig& config);
Result<std::unique_ptr<Compiler>> make_hip_compiler(const CompilerConfig& config);

}  // namespace kcache
