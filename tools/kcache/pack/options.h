// What the command line asks of kcache pack (commands/pack.cpp registers
// the options).
#pragma once

#include <string>
#include <vector>

#include "support/compiler_flags.h"

namespace kcache::tool {

struct PackOptions {
  std::string manifest;
  std::string target;
  std::string output;
  std::string work;
  std::string backend;
  std::string input_name;
  std::string sign;
  CompilerFlags compiler;
  unsigned jobs = 0;
  bool from_cache = false;
  // The manifest, and the programs and libraries its lines run, used even
  // when another user could have written them (include/kcache/trust.h).
  bool trust_manifest = false;
  bool trust_compiler = false;
  int worker_of = 0;  // run as one of this pack process's jobs (pack/workers.h)
  // Backends whose runtime takes no such target: their lines are left out
  // (the pack finds them; its workers are told).
  std::vector<std::string> leave_out;
  // This process's command line (argv), which its workers run again.
  std::vector<std::string> command_line;

  bool is_worker() const { return worker_of > 0; }
};

}  // namespace kcache::tool
