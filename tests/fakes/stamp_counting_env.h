// An Env over the real one that counts the stamps (fstat) taken of the
// files it opened: whether a lookup made that system call.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "env/env.h"

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
  class Counting final : public File {
   public:
    Counting(std::unique_ptr<File> file, std::atomic<int>& stamps)
        : file_(std::move(file)), stamps_(stamps) {}
    Result<std::uint64_t> size() const override { return file_->size(); }
    FileId id() const override { return file_->id(); }
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      return file_->read_at(offset, out);
    }
    Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
      return file_->write_at(offset, data);
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override { return file_->sync(); }
    Result<FileStamp> stamp() const override {
      ++stamps_;
      return file_->stamp();
    }
    Result<std::shared_ptr<const FileMapping>> map(std::uint64_t length) const override {
      return file_->map(length);
    }
    Result<std::shared_ptr<FileMapping>> map_writable(std::uint64_t length) override {
      return file_->map_writable(length);
    }

   private:
    std::unique_ptr<File> file_;
    std::atomic<int>& stamps_;
  };

  Result<std::unique_ptr<File>> counted(Result<std::unique_ptr<File>> file) const {
    if (!file) return file.status();
    return std::unique_ptr<File>(std::make_unique<Counting>(std::move(*file), stamps_));
  }

  mutable std::atomic<int> stamps_{0};
};

}  // namespace kcache::testing
