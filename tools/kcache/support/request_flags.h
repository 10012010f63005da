// The flags that describe one kernel request, shared by `kcache compile`
// and `kcache explain`: one set of names, help texts and checks.
#pragma once

#include <kcache/compiler.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "support/compiler_flags.h"

namespace kcache::tool {

struct RequestFlags {
  std::string backend;
  std::string source;
  std::vector<std::string> kernels;
  std::string options;
  std::string target;
  std::vector<std::string> include_dirs;
  std::vector<std::string> headers;  // NAME=FILE
  CompilerFlags compiler;
};

// Registers --backend, --source, --kernel, --options, --target,
// --include-dir, --header and the compiler's flags on `cmd`; `required`:
// --backend and --source must be given.
void add_request_flags(CLI::App* cmd, RequestFlags& flags, bool required);

// The request and its compiler, read from the files the flags name: 0,
// or the exit status after saying why not (2 for a usage error).
int make_request(const RequestFlags& flags, KernelRequest& request,
                 std::unique_ptr<Compiler>& compiler);

}  // namespace kcache::tool
