// kcache pack's first step: what it is to do, decided before any compile.
// The command line and the manifest are checked, the lines to compile
// chosen (those whose backend takes the target), and the pack's own cache
// opened over the work folder; what cannot be done is said here, before a
// folder is made or a worker started, whenever it can be found so early.
#pragma once

#include <kcache/cache.h>

#include <chrono>
#include <memory>
#include <string>

#include "pack/line_compilers.h"
#include "pack/options.h"
#include "pack/recorded_lines.h"

namespace kcache::tool {

struct PackPlan {
  std::chrono::steady_clock::time_point began;  // the pack's start
  RecordedLines read;                           // read.lines: the lines to compile, in order
  CompilerConfig config;                        // the command line's (each line adds its own)
  LineCompilers compilers;                      // made while planning, used by the compiles
  std::string work;                             // the work folder
  std::unique_ptr<Cache> cache;                 // the pack's own cache, its user tier there
};

// Plans the pack `options` ask for (a worker's too: it reads the same
// manifest): 0 with `plan` made, or the exit status after saying why not.
// The backends whose runtime takes no such target are added to
// `options.leave_out`, for the workers to be told.
int plan_pack(PackOptions& options, PackPlan& plan);

}  // namespace kcache::tool
