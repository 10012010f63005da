// The seam under every side effect kcache has on the machine: environment
// variables, the file system and the clock. `Env::posix()` is the real one;
// tests wrap it to inject ENOSPC, EIO, EACCES and torn writes
// (tests/fakes/fault_env.h). SQLite does its own I/O and is not behind it.
//
// All methods are thread-safe and never throw. File errors carry errno's
// text and the path.
#pragma once

#include <kcache/status.h>

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/byte_buffer.h"

namespace kcache {

// A file opened for positioned reads; closed when destroyed.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  [[nodiscard]] virtual std::uint64_t size() const = 0;
  // Reads exactly out.size() bytes at `offset`; kIoError (or kCorruption when
  // the file is shorter) otherwise.
  virtual Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const = 0;
};

// A held lock; released when destroyed, and by the kernel when the process
// dies, however it dies.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process's real environment and file system.
  static Env& posix();

  [[nodiscard]] virtual std::optional<std::string> get_env(const std::string& name) const = 0;
  // $HOME, else the password database's home of this user; nullopt if none.
  [[nodiscard]] virtual std::optional<std::string> home_dir() const = 0;
  [[nodiscard]] virtual std::int64_t now_unix() const = 0;

  // The whole file, read with one open/fstat/pread/close. kNotFound when it
  // does not exist.
  virtual Result<ByteBuffer> read_file(const std::string& path) const = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> open_random_access(
      const std::string& path) const = 0;
  // Writes `data` to a temporary file beside `path` (created with `mode`),
  // fsyncs it when `sync`, and renames it over `path`. Either the old or the
  // whole new content is at `path` afterwards, never a part.
  virtual Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data,
                                   bool sync, mode_t mode = 0600) = 0;
  // mkdir -p; created folders get `mode`. Existing folders are fine; an
  // existing non-folder is kIoError.
  virtual Status create_dirs(const std::string& path, mode_t mode) = 0;
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Removing what does not exist is ok.
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status remove_all(const std::string& path) = 0;
  // kNotFound when the folder does not exist.
  virtual Result<std::vector<DirEntry>> list_dir(const std::string& path) const = 0;
  [[nodiscard]] virtual bool is_dir(const std::string& path) const = 0;
  // Tries to lock one byte, at `offset`, of `path` (created 0600 when
  // missing) for this call alone: two calls conflict even in one process.
  // nullptr when someone else holds it; a Status when locking is impossible.
  virtual Result<std::unique_ptr<FileLock>> try_lock(const std::string& path,
                                                      std::uint64_t offset) = 0;
  [[nodiscard]] virtual bool exists(const std::string& path) const = 0;
};

// Forwards everything to another Env; tests override what they fault.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& target) : target_(target) {}
  std::optional<std::string> get_env(const std::string& name) const override {
    return target_.get_env(name);
  }
  std::optional<std::string> home_dir() const override { return target_.home_dir(); }
  std::int64_t now_unix() const override { return target_.now_unix(); }
  Result<ByteBuffer> read_file(const std::string& path) const override {
    return target_.read_file(path);
  }
  Result<std::unique_ptr<RandomAccessFile>> open_random_access(
      const std::string& path) const override {
    return target_.open_random_access(path);
  }
  Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data, bool sync,
                           mode_t mode = 0600) override {
    return target_.write_file_atomic(path, data, sync, mode);
  }
  Status create_dirs(const std::string& path, mode_t mode) override {
    return target_.create_dirs(path, mode);
  }
  Status rename(const std::string& from, const std::string& to) override {
    return target_.rename(from, to);
  }
  Status remove_file(const std::string& path) override { return target_.remove_file(path); }
  Status remove_all(const std::string& path) override { return target_.remove_all(path); }
  Result<std::vector<DirEntry>> list_dir(const std::string& path) const override {
    return target_.list_dir(path);
  }
  bool is_dir(const std::string& path) const override { return target_.is_dir(path); }
  Result<std::unique_ptr<FileLock>> try_lock(const std::string& path,
                                              std::uint64_t offset) override {
    return target_.try_lock(path, offset);
  }
  bool exists(const std::string& path) const override { return target_.exists(path); }

 protected:
  Env& target_;
};

// "<what> <path>: <strerror(err)>" as a Status, kNotFound for ENOENT.
Status errno_status(const std::string& what, const std::string& path, int err);

}  // namespace kcache
