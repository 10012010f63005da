// A File that forwards every call to another one (as EnvWrapper does for an
// Env): a fake overrides only what it changes.
#pragma once

#include <memory>

#include "env/env.h"

namespace kcache::testing {

class FileWrapper : public File {
 public:
  explicit FileWrapper(std::unique_ptr<File> file) : file_(std::move(file)) {}
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
  Result<FileStamp> stamp() const override { return file_->stamp(); }
  Result<std::shared_ptr<const FileMapping>> map(std::uint64_t length) const override {
    return file_->map(length);
  }
  Result<std::shared_ptr<FileMapping>> map_writable(std::uint64_t length) override {
    return file_->map_writable(length);
  }

 protected:
  const File& file() const { return *file_; }

 private:
  std::unique_ptr<File> file_;
};

}  // namespace kcache::testing
