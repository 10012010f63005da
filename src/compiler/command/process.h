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

// A fresh private folder (0700) under $TMPDIR or /tmp, removed on destruction.
class TempDir {
 public:
  static Result<TempDir> create(const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace kcache
