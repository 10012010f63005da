// kcache pack's second step: the planned lines compiled, each in one of
// the pack's jobs (pack/workers.h), into the work folder's cache.
#pragma once

#include <chrono>
#include <cstddef>

#include "pack/options.h"
#include "pack/plan.h"
#include "pack/tally.h"

namespace kcache::tool {

// What the jobs made of the lines.
struct CompiledLines {
  explicit CompiledLines(std::size_t repeats_read) : tally(repeats_read) {}

  PackTally tally;
  std::size_t from_user_cache = 0;  // --from-cache: the kernels taken, not compiled
  unsigned jobs = 0;
  std::chrono::steady_clock::time_point started;  // the compiles' start
  double seconds = 0;                             // from then to the last outcome
  double first_done = -1;  // from then to the first kernel compiled; -1: none
};

// The parent's part: runs the jobs over `plan`'s lines (after taking what
// the user cache holds, with --from-cache), the progress on stderr, and
// counts what became of each line.
CompiledLines compile_lines(const PackOptions& options, PackPlan& plan);

// A worker's part: compiles the lines it is handed on stdin (their
// indexes into `plan`'s lines, one a line) and answers each with its
// outcome on stdout, until stdin ends. Returns the exit status, 0.
int serve_as_worker(PackPlan& plan);

}  // namespace kcache::tool
