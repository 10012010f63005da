// The flags that configure a compiler, shared by `kcache compile` and
// `kcache pack`: one set of names, help texts and checks.
#pragma once

#include <kcache/compiler.h>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace kcache::tool {

struct CompilerFlags {
  std::string command;
  std::string compiler_id;
  std::string nvrtc_library;
  std::string hip_library;
  std::vector<std::string> harmless_options;
  int platform = -1;
  int device = 0;
  double timeout_seconds = 600;
};

// Registers --command, --compiler-id, --nvrtc-library, --hip-library,
// --harmless-option, --platform, --device and --timeout on `cmd`.
// `command_default`: what --command and --compiler-id default to, in words.
void add_compiler_flags(CLI::App* cmd, CompilerFlags& flags, const std::string& command_default);

// The config the flags give (backend and input name left to the caller).
CompilerConfig config_of(const CompilerFlags& flags);

}  // namespace kcache::tool
