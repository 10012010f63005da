// Runs a program and waits for it, its output captured in a file.
#pragma once

#include <kcache/status.h>

#include <string>
#include <vector>

namespace kcache {

struct ProcessResult {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the signal that ended it, or 0
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null. kUnavailable
// when it cannot be started; otherwise the result, whatever its exit code.
Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::string& output_path);

}  // namespace kcache
