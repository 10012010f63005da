// The seam under every side effect kcache has on the machine: environment
// variables, the file system and the clock. `Env::posix()` is the real one;
// tests wrap it to inject ENOSPC, EIO, EACCES and torn writes
// (tests/fakes/fault_env.h).
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
#include <string_view>
#include <vector>

#include "base/byte_buffer.h"

namespace kcache {

class ChangeWatch;  // env/change_watch.h
class FileMapping;  // env/file_mapping.h

// A new file being written (Env::new_writable_file). Destroying it closes
// it if still open; the file stays where it is either way.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` at the end of the file.
  virtual Status append(std::span<const std::uint8_t> data) = 0;
  // fsync.
  virtual Status sync() = 0;
  virtual Status close() = 0;
};

// Which file a path named when it was opened or looked at (st_dev,
// st_ino): a path that now names another file was replaced or removed.
struct FileId {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileId&) const = default;
};

enum class FileType { kRegular, kDirectory, kSymlink, kOther };

// What stat (following links) says of a file, precisely enough to tell
// that it changed: an edit changes its size, its mtime or its ctime (a
// rename over it, its inode).
struct FileStamp {
  FileId id;
  FileType type = FileType::kOther;  // never kSymlink: links are followed
  std::uint64_t size = 0;
  std::int64_t modified_ns = 0;  // since the epoch
  std::int64_t changed_ns = 0;   // ctime
  bool operator==(const FileStamp&) const = default;
};

// A file read at positions (Env::open_random_access: a .kdb, a log read
// only) or read and written (Env::open_file: the user tier's logs); closed
// when destroyed. Its size is asked anew each time: other processes may
// append to it. Writes to a file opened read-only fail.
class File {
 public:
  virtual ~File() = default;
  [[nodiscard]] virtual Result<std::uint64_t> size() const = 0;
  [[nodiscard]] virtual FileId id() const = 0;
  // Reads exactly out.size() bytes at `offset`; kCorruption when the file
  // ends first.
  virtual Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const = 0;
  // Writes all of `data` at `offset`.
  virtual Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) = 0;
  virtual Status truncate(std::uint64_t size) = 0;
  // fdatasync: the bytes written are on the disk.
  virtual Status sync() = 0;
  // What fstat says of the open file now: an edit in place changes it.
  [[nodiscard]] virtual Result<FileStamp> stamp() const {
    return Status::not_supported("this file cannot be stamped");
  }
  // A read-only mapping of bytes [0, length) (env/file_mapping.h);
  // kNotSupported where the file is not to be mapped: the caller reads it.
  [[nodiscard]] virtual Result<std::shared_ptr<const FileMapping>> map(
      std::uint64_t /*length*/) const {
    return Status::not_supported("this file cannot be mapped");
  }
  // A shared mapping of bytes [0, length) for reading and writing, of a
  // file opened for both; kNotSupported where the file is not to be mapped.
  [[nodiscard]] virtual Result<std::shared_ptr<FileMapping>> map_writable(
      std::uint64_t /*length*/) {
    return Status::not_supported("this file cannot be mapped for writing");
  }
};

enum class OpenMode {
  kReadWrite,  // read and write an existing file
  kCreate,     // read and write, created with the given mode when missing
  // As kCreate, but every write lands at the file's end as it is then,
  // whatever offset write_at names (O_APPEND): a file others may cut or
  // grow between a look at its size and a write.
  kAppend,
};

// What lstat says of a path.
struct FileInfo {
  FileType type = FileType::kOther;
  mode_t mode = 0;  // permission bits (07777)
  uid_t owner = 0;
  gid_t group = 0;
  std::uint64_t size = 0;
  std::int64_t modified_unix = 0;
  FileId id;
};

// Who an access ACL lets write a file besides its owner: the users and
// groups of its named entries whose permission, under the ACL's mask,
// includes write (POSIX.1e ACLs, which a file's mode does not show: with
// one, the mode's group bits are its mask).
struct AclWriters {
  std::vector<uid_t> users;
  std::vector<gid_t> groups;
};

// The kind of file system a path is on, as far as a cache cares: a network
// file system (NFS, SMB, Lustre, ...) gives no shared memory across machines
// and weak locks; FUSE may be local or remote (sshfs), so it is told apart.
enum class FileSystemKind { kLocal, kNetwork, kFuse };

struct FileSystemInfo {
  FileSystemKind kind = FileSystemKind::kLocal;
  std::string name;  // "nfs", "cifs", "lustre", "fuse", ...; empty when local
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
  // `path` opened for positioned reads. A path that is not a regular file
  // is kIoError; a missing one kNotFound.
  virtual Result<std::unique_ptr<File>> open_random_access(const std::string& path) const = 0;
  // `path` opened for positioned reads and writes; failures as above (a
  // missing file is created with kCreate).
  virtual Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                                  mode_t create_mode = 0600) = 0;
  // Creates `path`, which must not exist, for writing, with `mode`.
  virtual Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                                  mode_t mode) = 0;
  // Writes `data` to a temporary file beside `path` (created with `mode`),
  // fsyncs it when `sync`, and renames it over `path`. Either the old or the
  // whole new content is at `path` afterwards, never a part; on failure the
  // temporary file is removed. Built on new_writable_file, rename and
  // remove_file, so that a fault injected in any of them is met here too.
  virtual Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data,
                                   bool sync, mode_t mode = 0600);
  // mkdir -p; created folders get `mode`. Existing folders are fine; an
  // existing non-folder is kIoError.
  virtual Status create_dirs(const std::string& path, mode_t mode) = 0;
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // fsync of the folder `path`: the names renamed or created in it last
  // through a power cut.
  virtual Status sync_dir(const std::string& path) = 0;
  // Removing what does not exist is ok.
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status remove_all(const std::string& path) = 0;
  // kNotFound when the folder does not exist.
  virtual Result<std::vector<DirEntry>> list_dir(const std::string& path) const = 0;
  [[nodiscard]] virtual bool is_dir(const std::string& path) const = 0;
  // lstat: a symbolic link is reported as one. kNotFound when absent.
  virtual Result<FileInfo> file_info(const std::string& path) const = 0;
  // stat, links followed. kNotFound when absent (or a link to nothing).
  virtual Result<FileStamp> stamp(const std::string& path) const = 0;
  // Who `path`'s access ACL lets write it (links followed); none when it
  // has no ACL beyond its mode, or its file system keeps none.
  virtual Result<AclWriters> acl_writers(const std::string& path) const = 0;
  // Whether this process may create files in folder `path`, or, when it does
  // not exist, create it: ok, or why not (its nearest existing parent is
  // not a folder, cannot be written, is on a read-only file system). Looks;
  // never creates.
  virtual Status check_writable(const std::string& path) const = 0;
  // The file system holding `path` (or its nearest existing parent).
  [[nodiscard]] virtual FileSystemInfo file_system(const std::string& path) const = 0;
  // The real user id of this process.
  [[nodiscard]] virtual uid_t user_id() const = 0;
  // Whether group `group` holds this user alone: the user's own primary
  // group, named as the user, with no other member listed (a "user private
  // group", as Debian and Fedora make for each user, where a umask of 002
  // leaves new folders group-writable), and no other account's primary
  // group. Writable by that group is writable by no one else.
  [[nodiscard]] virtual bool group_is_private(gid_t group) const = 0;
  // Tries to lock one byte, at `offset`, of `path` (created with `mode`
  // when missing; a symbolic link there is an error, never followed) for
  // this call alone: two calls conflict even in one process.
  // nullptr when someone else holds it; a Status when locking is impossible.
  virtual Result<std::unique_ptr<FileLock>> try_lock(const std::string& path, std::uint64_t offset,
                                                     mode_t mode) = 0;
  [[nodiscard]] virtual bool exists(const std::string& path) const = 0;
  // The process's change notification (env/change_watch.h), for a memo
  // that would otherwise look at every file it depends on; nullptr where
  // there is none. An EnvWrapper has none: a test that fakes the file
  // system must see every look.
  [[nodiscard]] virtual ChangeWatch* change_watch() const { return nullptr; }
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
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    return target_.open_random_access(path);
  }
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          mode_t mode) override {
    return target_.new_writable_file(path, mode);
  }
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    return target_.open_file(path, mode, create_mode);
  }
  // write_file_atomic is not forwarded: Env's runs on this wrapper's
  // new_writable_file, rename and remove_file, faults included.
  Status create_dirs(const std::string& path, mode_t mode) override {
    return target_.create_dirs(path, mode);
  }
  Status rename(const std::string& from, const std::string& to) override {
    return target_.rename(from, to);
  }
  Status sync_dir(const std::string& path) override { return target_.sync_dir(path); }
  Status remove_file(const std::string& path) override { return target_.remove_file(path); }
  Status remove_all(const std::string& path) override { return target_.remove_all(path); }
  Result<std::vector<DirEntry>> list_dir(const std::string& path) const override {
    return target_.list_dir(path);
  }
  bool is_dir(const std::string& path) const override { return target_.is_dir(path); }
  Result<FileInfo> file_info(const std::string& path) const override {
    return target_.file_info(path);
  }
  Result<FileStamp> stamp(const std::string& path) const override { return target_.stamp(path); }
  Result<AclWriters> acl_writers(const std::string& path) const override {
    return target_.acl_writers(path);
  }
  Status check_writable(const std::string& path) const override {
    return target_.check_writable(path);
  }
  FileSystemInfo file_system(const std::string& path) const override {
    return target_.file_system(path);
  }
  uid_t user_id() const override { return target_.user_id(); }
  bool group_is_private(gid_t group) const override { return target_.group_is_private(group); }
  Result<std::unique_ptr<FileLock>> try_lock(const std::string& path, std::uint64_t offset,
                                             mode_t mode) override {
    return target_.try_lock(path, offset, mode);
  }
  bool exists(const std::string& path) const override { return target_.exists(path); }

 protected:
  Env& target_;
};

// "<what> <path>: <strerror(err)>" as a Status; kNotFound for ENOENT and
// ENOTDIR (a part of the path is a file, so nothing can be there).
Status errno_status(const std::string& what, const std::string& path, int err);

}  // namespace kcache
