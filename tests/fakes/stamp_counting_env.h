// An Env over the real one that counts the stamps (fstat) taken of the
// files it opened: whether a lookup made that system call.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "env/env.h"
#include "fakes/file_wrapper.h"

namespace kcache::testing {

class StampCountingEnv final : public EnvWrapper {
 public:
  StampCountingEnv() : EnvWrapper(Env::posix()) {}
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    return counted(EnvWrapper::open_random_access(path));
  }
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    return counted(EnvWrapper::open_file(path, mode, create_mode));
  }
  int stamps() const { return stamps_.load(); }

 private:
  class Counting final : public FileWrapper {
   public:
    Counting(std::unique_ptr<File> file, std::atomic<int>& stamps)
        : FileWrapper(std::move(file)), stamps_(stamps) {}
    Result<FileStamp> stamp() const override {
      ++stamps_;
      return FileWrapper::stamp();
    }

   private:
    std::atomic<int>& stamps_;
  };

  Result<std::unique_ptr<File>> counted(Result<std::unique_ptr<File>> file) const {
    if (!file) return file.status();
    return std::unique_ptr<File>(std::make_unique<Counting>(std::move(*file), stamps_));
  }

  mutable std::atomic<int> stamps_{0};
};

}  // namespace kcache::testing
