// Runs a program and waits for it, its output captured in a file.
#pragma once

#include <kcache/status.h>

#include <chrono>
#include <string>
#include <vector>

namespace kcache {

struct ProcessResult {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the signal that ended it, or 0
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null and waits at
// most `timeout` for it (0 or less: no limit). kUnavailable when it cannot
// be started; kTimeout when it is still running at the deadline, with what
// it had printed in details(); otherwise the result, whatever its exit code.
//
// At the deadline the program and every process below it (a compiler
// driver's cc1, a shell's children; found through /proc) are stopped with
// SIGKILL, and the program is reaped before the call returns. A descendant
// that has already left the tree (a daemon, reparented to init) is not
// stopped. The program stays in the caller's process group, so the
// terminal's Ctrl-C stops it with the caller.
Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::string& output_path,
                                  std::chrono::milliseconds timeout);

}  // namespace kcache
