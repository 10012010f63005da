// An Env that fails chosen operations, for fault-injection tests: per-path
// errno faults on any file operation (ENOSPC after N bytes, EIO on read,
// EACCES on open, EROFS, a failing fsync), a missing HOME, set variables, a
// fake user id and a fake file system type (NFS, FUSE). It also counts the
// key locks it found held by someone else, so a test can wait until a
// cache is waiting for another one's compile.
//
// Faults go through errno_status, so messages read like the real ones
// ("cannot write /x/y.tmp.1.2.3: No space left on device"). The writes of
// write_file_atomic go through new_writable_file/rename/remove_file here,
// so a fault halfway through a write exercises the real cleanup.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "env/env.h"

namespace kcache::testing {

enum class FaultOp {
  kOpen,    // read_file, open_random_access, open_file: opening
  kRead,    // read_file, File::read_at: reading bytes
  kCreate,  // new_writable_file, open_file
  kWrite,   // WritableFile::append, File::write_at (after `after_bytes` bytes went through)
  kSync,    // WritableFile::sync, File::sync
  kClose,   // WritableFile::close
  kRename,  // rename (matched on either path)
  kMkdir,   // create_dirs, when the folder does not exist yet
  kRemove,  // remove_file, remove_all
  kList,    // list_dir
  kStat,    // file_info
  kAccess,  // check_writable
  kLock,    // try_lock
};

class FaultEnv final : public EnvWrapper {
 public:
  FaultEnv() : EnvWrapper(Env::posix()) {}

  // Variables seen by kcache: only these (the real environment is hidden).
  std::map<std::string, std::string> vars;
  std::optional<std::string> home;  // nullopt: no home directory at all
  std::optional<std::int64_t> now;  // a fixed clock (Unix seconds)
  // Whole-operation faults, kept for older tests: every write, mkdir or
  // read_file fails with this Status.
  std::optional<Status> fail_writes;
  std::optional<Status> fail_mkdir;
  std::optional<Status> fail_reads;
  mutable std::atomic<int> writes{0};  // counted by const files too
  // The user id reported instead of the real one.
  std::optional<uid_t> uid;
  // Path prefix -> the file system reported for paths under it.
  std::map<std::string, FileSystemInfo> file_systems;
  // Whether files are mapped and stamped as on a real system (reads through
  // a mapping are not faulted); off, every read goes through read_at.
  bool map_files = false;
  // check_writable answers ok unless a kAccess fault matches (tests name
  // folders such as /home/alice that need not exist); true asks the real
  // file system.
  bool real_writable_check = false;

  // Fails `op` on every path that contains `path_part` ("" matches every
  // path) with `err`. For kWrite, `after_bytes` bytes are written first.
  void inject(FaultOp op, std::string path_part, int err, std::uint64_t after_bytes = 0) {
    std::lock_guard lock(mutex_);
    faults_.push_back({op, std::move(path_part), err, after_bytes});
  }
  // A read-only file system under `path_part`: EROFS on every change.
  void read_only(const std::string& path_part) {
    for (FaultOp op : {FaultOp::kCreate, FaultOp::kRename, FaultOp::kMkdir, FaultOp::kRemove,
                       FaultOp::kAccess, FaultOp::kLock}) {
      inject(op, path_part, EROFS);
    }
  }
  void clear_faults() {
    std::lock_guard lock(mutex_);
    faults_.clear();
  }
  // How many operations failed by an injected fault.
  [[nodiscard]] int faults_met() const { return faults_met_; }
  // Waits until try_lock has found a key's lock held by someone else `n`
  // times in all; false when that did not happen within `limit`. A key's
  // lock is an odd byte of the lock file (byte 0 is the user tier's append
  // lock, held briefly by writers and by readers rebuilding a hint).
  bool wait_until_busy_key_locks(int n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return busy_changed_.wait_for(lock, limit, [&] { return busy_key_locks_ >= n; });
  }
  [[nodiscard]] int busy_key_locks() const {
    std::lock_guard lock(mutex_);
    return busy_key_locks_;
  }

  std::optional<std::string> get_env(const std::string& name) const override {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> home_dir() const override { return home; }
  std::int64_t now_unix() const override { return now ? *now : EnvWrapper::now_unix(); }

  Result<ByteBuffer> read_file(const std::string& path) const override {
    if (fail_reads) return *fail_reads;
    if (auto f = match(FaultOp::kOpen, path)) return errno_status("cannot open", path, f->err);
    if (auto f = match(FaultOp::kRead, path)) {
      // Only an existing file can fail a read.
      if (!exists(path)) return errno_status("cannot open", path, ENOENT);
      return errno_status("cannot read", path, f->err);
    }
    return EnvWrapper::read_file(path);
  }
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    if (auto f = match(FaultOp::kOpen, path)) return errno_status("cannot open", path, f->err);
    auto file = EnvWrapper::open_random_access(path);
    if (!file) return file.status();
    return std::unique_ptr<File>(std::make_unique<FaultyFile>(std::move(*file), path, *this));
  }
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    if (auto f = match(FaultOp::kOpen, path)) return errno_status("cannot open", path, f->err);
    if (auto f = match(FaultOp::kCreate, path)) return errno_status("cannot open", path, f->err);
    auto file = EnvWrapper::open_file(path, mode, create_mode);
    if (!file) return file.status();
    return std::unique_ptr<File>(std::make_unique<FaultyFile>(std::move(*file), path, *this));
  }
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          mode_t mode) override {
    if (auto f = match(FaultOp::kCreate, path)) return errno_status("cannot create", path, f->err);
    auto file = EnvWrapper::new_writable_file(path, mode);
    if (!file) return file.status();
    return std::unique_ptr<WritableFile>(
        std::make_unique<FaultyWriter>(std::move(*file), path, *this));
  }
  Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data, bool sync,
                           mode_t mode) override {
    ++writes;
    if (fail_writes) return *fail_writes;
    return Env::write_file_atomic(path, data, sync, mode);
  }
  Status create_dirs(const std::string& path, mode_t mode) override {
    if (fail_mkdir) return *fail_mkdir;
    if (!EnvWrapper::is_dir(path)) {
      if (auto f = match(FaultOp::kMkdir, path)) {
        return errno_status("cannot create directory", path, f->err);
      }
    }
    return EnvWrapper::create_dirs(path, mode);
  }
  Status rename(const std::string& from, const std::string& to) override {
    auto f = match(FaultOp::kRename, from);
    if (!f) f = match(FaultOp::kRename, to);
    if (f) return errno_status("cannot rename", from, f->err);
    return EnvWrapper::rename(from, to);
  }
  Status remove_file(const std::string& path) override {
    if (auto f = match(FaultOp::kRemove, path)) return errno_status("cannot remove", path, f->err);
    return EnvWrapper::remove_file(path);
  }
  Status remove_all(const std::string& path) override {
    if (auto f = match(FaultOp::kRemove, path)) return errno_status("cannot remove", path, f->err);
    return EnvWrapper::remove_all(path);
  }
  Result<std::vector<DirEntry>> list_dir(const std::string& path) const override {
    if (auto f = match(FaultOp::kList, path)) return errno_status("cannot list", path, f->err);
    return EnvWrapper::list_dir(path);
  }
  Result<FileInfo> file_info(const std::string& path) const override {
    if (auto f = match(FaultOp::kStat, path)) return errno_status("cannot stat", path, f->err);
    return EnvWrapper::file_info(path);
  }
  Status check_writable(const std::string& path) const override {
    if (auto f = match(FaultOp::kAccess, path))
      return errno_status("cannot write in", path, f->err);
    if (!real_writable_check) return Status::ok();
    return EnvWrapper::check_writable(path);
  }
  FileSystemInfo file_system(const std::string& path) const override {
    for (const auto& [prefix, info] : file_systems) {
      if (path.starts_with(prefix)) return info;
    }
    return EnvWrapper::file_system(path);
  }
  uid_t user_id() const override { return uid ? *uid : EnvWrapper::user_id(); }
  Result<std::unique_ptr<FileLock>> try_lock(const std::string& path, std::uint64_t offset,
                                             mode_t mode) override {
    if (auto f = match(FaultOp::kLock, path))
      return errno_status("cannot open lock file", path, f->err);
    auto lock = EnvWrapper::try_lock(path, offset, mode);
    if (lock && *lock == nullptr && offset % 2 == 1) {
      std::lock_guard guard(mutex_);
      ++busy_key_locks_;
      busy_changed_.notify_all();
    }
    return lock;
  }

 private:
  struct Fault {
    FaultOp op;
    std::string path_part;
    int err;
    std::uint64_t after_bytes;
  };

  std::optional<Fault> match(FaultOp op, const std::string& path) const {
    std::lock_guard lock(mutex_);
    for (const auto& fault : faults_) {
      if (fault.op == op && path.find(fault.path_part) != std::string::npos) {
        ++faults_met_;
        return fault;
      }
    }
    return std::nullopt;
  }

  class FaultyWriter final : public WritableFile {
   public:
    FaultyWriter(std::unique_ptr<WritableFile> file, std::string path, const FaultEnv& env)
        : file_(std::move(file)), path_(std::move(path)), env_(env) {}
    Status append(std::span<const std::uint8_t> data) override {
      if (auto f = env_.match(FaultOp::kWrite, path_)) {
        // A partial write, as a full disk gives: the first bytes land.
        std::uint64_t room = f->after_bytes > written_ ? f->after_bytes - written_ : 0;
        auto part =
            data.first(static_cast<std::size_t>(std::min<std::uint64_t>(room, data.size())));
        if (Status s = file_->append(part); !s.is_ok()) return s;
        written_ += part.size();
        return errno_status("cannot write", path_, f->err);
      }
      written_ += data.size();
      return file_->append(data);
    }
    Status sync() override {
      if (auto f = env_.match(FaultOp::kSync, path_))
        return errno_status("cannot sync", path_, f->err);
      return file_->sync();
    }
    Status close() override {
      Status closed = file_->close();
      if (auto f = env_.match(FaultOp::kClose, path_)) {
        return errno_status("cannot close", path_, f->err);
      }
      return closed;
    }

   private:
    std::unique_ptr<WritableFile> file_;
    std::string path_;
    const FaultEnv& env_;
    std::uint64_t written_ = 0;
  };

  class FaultyFile final : public File {
   public:
    FaultyFile(std::unique_ptr<File> file, std::string path, const FaultEnv& env)
        : file_(std::move(file)), path_(std::move(path)), env_(env) {}
    Result<std::uint64_t> size() const override { return file_->size(); }
    FileId id() const override { return file_->id(); }
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      if (env_.fail_reads) return *env_.fail_reads;
      if (auto f = env_.match(FaultOp::kRead, path_)) {
        return errno_status("cannot read", path_, f->err);
      }
      return file_->read_at(offset, out);
    }
    Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
      ++env_.writes;
      if (env_.fail_writes) return *env_.fail_writes;
      if (auto f = env_.match(FaultOp::kWrite, path_)) {
        // A partial write, as a full disk gives: the first bytes land.
        std::uint64_t room = f->after_bytes > written_ ? f->after_bytes - written_ : 0;
        auto part =
            data.first(static_cast<std::size_t>(std::min<std::uint64_t>(room, data.size())));
        if (Status s = file_->write_at(offset, part); !s.is_ok()) return s;
        written_ += part.size();
        return errno_status("cannot write", path_, f->err);
      }
      written_ += data.size();
      return file_->write_at(offset, data);
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override {
      if (auto f = env_.match(FaultOp::kSync, path_))
        return errno_status("cannot sync", path_, f->err);
      return file_->sync();
    }
    // The use tables' mappings (store/user/use_table.h); reads of mapped
    // packages are not faulted either (map is not forwarded: they read).
    Result<std::shared_ptr<FileMapping>> map_writable(std::uint64_t length) override {
      return file_->map_writable(length);
    }
    // Reads through a mapping (packages, user-tier logs) only when the
    // test asks for them (map_files): they are not faulted.
    Result<std::shared_ptr<const FileMapping>> map(std::uint64_t length) const override {
      if (!env_.map_files) return File::map(length);
      return file_->map(length);
    }
    Result<FileStamp> stamp() const override {
      if (!env_.map_files) return File::stamp();
      return file_->stamp();
    }

   private:
    std::unique_ptr<File> file_;
    std::string path_;
    const FaultEnv& env_;
    std::uint64_t written_ = 0;
  };

  mutable std::mutex mutex_;
  std::vector<Fault> faults_;
  mutable std::atomic<int> faults_met_{0};
  std::condition_variable busy_changed_;
  int busy_key_locks_ = 0;  // guarded by mutex_
};

}  // namespace kcache::testing
