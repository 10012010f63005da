// A fresh private folder (0700) under $TMPDIR or /tmp, removed with all it
// holds when the object dies. For compilers that need files on disk.
#pragma once

#include <kcache/status.h>

#include <string>

namespace kcache {

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
