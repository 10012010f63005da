// The real Env: POSIX calls, retried on EINTR.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "env/acl_writers.h"
#include "env/change_watch.h"
#include "env/env.h"
#include "env/file_mapping.h"
#include "env/random.h"
#include "env/unique_fd.h"

namespace kcache {

Status errno_status(const std::string& what, const std::string& path, int err) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::not_found(std::move(message));
  return Status::io_error(std::move(message));
}

namespace {

// `path()` names the file in errors (built only then).
template <typename PathOf>
Status pread_fully(int fd, std::uint64_t offset, std::span<std::uint8_t> out, const PathOf& path) {
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return errno_status("cannot read", path(), err);
    }
    if (n == 0) return Status::corruption("file " + path() + " is shorter than expected");
    done += static_cast<std::size_t>(n);
  }
  return Status::ok();
}

FileStamp stamp_of(const struct stat& st) {
  FileStamp stamp;
  stamp.id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  stamp.type = S_ISREG(st.st_mode)   ? FileType::kRegular
               : S_ISDIR(st.st_mode) ? FileType::kDirectory
                                     : FileType::kOther;
  stamp.size = static_cast<std::uint64_t>(st.st_size);
  stamp.modified_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
  stamp.changed_ns = st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec;
  return stamp;
}

class PosixFile final : public File {
 public:
  PosixFile(int fd, FileId id, std::string path) : fd_(fd), id_(id), path_(std::move(path)) {}
  Result<std::uint64_t> size() const override {
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return errno_status("cannot stat", path_, errno);
    return static_cast<std::uint64_t>(st.st_size);
  }
  FileId id() const override { return id_; }
  Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
    return pread_fully(fd_.get(), offset, out, [this]() -> const std::string& { return path_; });
  }
  Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::pwrite(fd_.get(), data.data() + done, data.size() - done,
                           static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot write", path_, errno);
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::ok();
  }
  Status truncate(std::uint64_t size) override {
    while (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
      if (errno != EINTR) return errno_status("cannot truncate", path_, errno);
    }
    return Status::ok();
  }
  Status sync() override {
    while (::fdatasync(fd_.get()) != 0) {
      if (errno != EINTR) return errno_status("cannot sync", path_, errno);
    }
    return Status::ok();
  }
  Result<FileStamp> stamp() const override {
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return errno_status("cannot stat", path_, errno);
    return stamp_of(st);
  }
  Result<std::shared_ptr<const FileMapping>> map(std::uint64_t length) const override {
    return FileMapping::map(fd_.get(), length, path_);
  }
  Result<std::shared_ptr<FileMapping>> map_writable(std::uint64_t length) override {
    return FileMapping::map_writable(fd_.get(), length, path_);
  }

 private:
  UniqueFd fd_;
  FileId id_;
  std::string path_;
};

// `path` opened with `flags` (and `mode` when created) as a regular file.
Result<std::unique_ptr<File>> open_posix_file(const std::string& path, int flags, mode_t mode) {
  // O_NONBLOCK: a fifo in the file's place must not hang the open.
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK, mode));
  if (fd.get() < 0) return errno_status("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return errno_status("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return Status::io_error(path + " is not a regular file");
  FileId id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  return std::unique_ptr<File>(std::make_unique<PosixFile>(fd.release(), id, path));
}

// The whole of the open file `fd`; `path` names it in errors (built only
// then).
template <typename PathOf>
Result<ByteBuffer> read_open_file(const UniqueFd& fd, const PathOf& path) {
  if (fd.get() < 0) {
    const int err = errno;  // before path() allocates
    return errno_status("cannot open", path(), err);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return errno_status("cannot stat", path(), err);
  }
  if (!S_ISREG(st.st_mode)) return Status::io_error(path() + " is not a regular file");
  ByteBuffer buffer = ByteBuffer::allocate(static_cast<std::size_t>(st.st_size));
  if (Status s = pread_fully(fd.get(), 0, buffer.mutable_span(), path); !s.is_ok()) return s;
  return buffer;
}

std::string temp_name_for(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) +
         "." + std::to_string(random_u64() % 1000000);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  PosixWritableFile(const PosixWritableFile&) = delete;
  PosixWritableFile& operator=(const PosixWritableFile&) = delete;

  Status append(std::span<const std::uint8_t> data) override {
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot write", path_, errno);
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::ok();
  }
  Status sync() override {
    if (::fsync(fd_) != 0) return errno_status("cannot sync", path_, errno);
    return Status::ok();
  }
  Status close() override {
    // The descriptor is gone after close(2) whatever it returns.
    int rc = ::close(std::exchange(fd_, -1));
    if (rc != 0) return errno_status("cannot close", path_, errno);
    return Status::ok();
  }

 private:
  int fd_;
  std::string path_;
};

// The network file systems among statfs's f_type values (linux/magic.h and
// the file systems' own headers). SQLite's WAL needs memory shared by every
// process that opens the file, which none of them gives across machines.
struct FileSystemMagic {
  unsigned long magic;
  const char* name;
};
constexpr FileSystemMagic kNetworkFileSystems[] = {
    {0x6969, "nfs"},       {0x517B, "smb"},        {0xFF534D42, "cifs"},   {0xFE534D42, "smb2"},
    {0x00C36400, "ceph"},  {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"},   {0x5346414F, "afs"},
    {0x6B414653, "afs"},   {0x01021997, "9p"},     {0x19830326, "beegfs"}, {0x20030528, "orangefs"},
    {0x013111A8, "ibrix"}, {0xAAD7AAEA, "panfs"},
};
constexpr unsigned long kFuseMagic = 0x65735546;

// An open-file-description lock: owned by this descriptor, not by the
// process, so threads (and separate calls) of one process exclude each
// other too; closing the descriptor, or dying, releases it.
class OfdLock final : public FileLock {
 public:
  explicit OfdLock(int fd) : fd_(fd) {}

 private:
  UniqueFd fd_;
};

class PosixEnv final : public Env {
 public:
  std::optional<std::string> get_env(const std::string& name) const override {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  std::optional<std::string> home_dir() const override {
    if (auto home = get_env("HOME"); home && !home->empty()) return home;
    struct passwd pwd;
    struct passwd* result = nullptr;
    char buffer[4096];
    if (::getpwuid_r(::getuid(), &pwd, buffer, sizeof buffer, &result) == 0 && result != nullptr &&
        result->pw_dir != nullptr && result->pw_dir[0] != '\0') {
      return std::string(result->pw_dir);
    }
    return std::nullopt;
  }

  std::int64_t now_unix() const override {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  Result<ByteBuffer> read_file(const std::string& path) const override {
    // O_NONBLOCK: a FIFO (or a device) at `path` must not hang the open; it
    // is refused as not a regular file.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    return read_open_file(fd, [&]() -> const std::string& { return path; });
  }

  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    return open_posix_file(path, O_RDONLY, 0);
  }

  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    const int flags = mode == OpenMode::kReadWrite ? 0
                      : mode == OpenMode::kCreate  ? O_CREAT
                                                  // kAppend: a manifest, never
                                                  // through a link in its place
                                                  : O_CREAT | O_APPEND | O_NOFOLLOW;
    return open_posix_file(path, O_RDWR | flags, create_mode);
  }

  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          mode_t mode) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return errno_status("cannot create", path, errno);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path));
  }

  Status create_dirs(const std::string& path, mode_t mode) override {
    if (path.empty()) return Status::invalid_argument("empty directory path");
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      return S_ISDIR(st.st_mode) ? Status::ok()
                                 : Status::io_error(path + " exists and is not a directory");
    }
    std::size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
      if (Status s = create_dirs(path.substr(0, slash), mode); !s.is_ok()) return s;
    }
    if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
      return errno_status("cannot create directory", path, errno);
    }
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::io_error(path + " exists and is not a directory");
    }
    return Status::ok();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return errno_status("cannot rename", from, errno);
    return Status::ok();
  }

  Status sync_dir(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) return errno_status("cannot open folder", path, errno);
    while (::fsync(fd.get()) != 0) {
      if (errno != EINTR) return errno_status("cannot sync folder", path, errno);
    }
    return Status::ok();
  }

  Status remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return errno_status("cannot remove", path, errno);
    }
    return Status::ok();
  }

  Status remove_all(const std::string& path) override {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (error) return Status::io_error("cannot remove " + path + ": " + error.message());
    return Status::ok();
  }

  Result<std::vector<DirEntry>> list_dir(const std::string& path) const override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return errno_status("cannot list", path, errno);
    std::vector<DirEntry> entries;
    while (struct dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_directory = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) is_directory = is_dir(path + "/" + name);
      entries.push_back({std::move(name), is_directory});
    }
    ::closedir(dir);
    return entries;
  }

  bool is_dir(const std::string& path) const override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<std::unique_ptr<FileLock>> try_lock(const std::string& path, std::uint64_t offset,
                                             mode_t mode) override {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode));
    if (fd.get() < 0) return errno_status("cannot open lock file", path, errno);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = static_cast<off_t>(offset & 0x3FFFFFFFFFFFFFFFull);
    lock.l_len = 1;
    while (::fcntl(fd.get(), F_OFD_SETLK, &lock) != 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EACCES) return std::unique_ptr<FileLock>();
      return errno_status("cannot lock", path, errno);
    }
    return std::unique_ptr<FileLock>(std::make_unique<OfdLock>(fd.release()));
  }

  bool exists(const std::string& path) const override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  Result<FileInfo> file_info(const std::string& path) const override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return errno_status("cannot stat", path, errno);
    FileInfo info;
    info.type = S_ISREG(st.st_mode)   ? FileType::kRegular
                : S_ISDIR(st.st_mode) ? FileType::kDirectory
                : S_ISLNK(st.st_mode) ? FileType::kSymlink
                                      : FileType::kOther;
    info.mode = st.st_mode & 07777;
    info.owner = st.st_uid;
    info.group = st.st_gid;
    info.size = static_cast<std::uint64_t>(st.st_size);
    info.modified_unix = st.st_mtim.tv_sec;
    info.id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    return info;
  }

  Result<FileStamp> stamp(const std::string& path) const override {
    struct stat st;
    // The working folder (a scan memo asks on every reuse): by its
    // descriptor, with no name to look up.
    const int looked =
        path == "." ? ::fstatat(AT_FDCWD, "", &st, AT_EMPTY_PATH) : ::stat(path.c_str(), &st);
    if (looked != 0) return errno_status("cannot stat", path, errno);
    return stamp_of(st);
  }

  Result<AclWriters> acl_writers(const std::string& path) const override {
    return read_acl_writers(path);
  }

  Status check_writable(const std::string& path) const override {
    std::string at = path;
    while (true) {
      struct stat st;
      if (::stat(at.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return Status::io_error(at + " is not a directory");
        // access(2) also answers EROFS for a read-only mount.
        if (::access(at.c_str(), W_OK | X_OK) != 0) {
          return errno_status("cannot write in", at, errno);
        }
        return Status::ok();
      }
      if (errno != ENOENT && errno != ENOTDIR) return errno_status("cannot stat", at, errno);
      std::size_t slash = at.find_last_of('/');
      if (at == "/" || at == ".") return Status::io_error("no existing folder above " + path);
      at = slash == std::string::npos ? std::string(".")
           : slash == 0               ? std::string("/")
                                      : at.substr(0, slash);
    }
  }

  FileSystemInfo file_system(const std::string& path) const override {
    std::string at = path.empty() ? std::string(".") : path;
    struct statfs fs;
    while (::statfs(at.c_str(), &fs) != 0) {
      if (errno == EINTR) continue;
      std::size_t slash = at.find_last_of('/');
      if (slash == std::string::npos || at == "/") return {};
      at = slash == 0 ? std::string("/") : at.substr(0, slash);
    }
    const auto magic = static_cast<unsigned long>(fs.f_type) & 0xFFFFFFFFul;
    if (magic == kFuseMagic) return {FileSystemKind::kFuse, "fuse"};
    for (const auto& known : kNetworkFileSystems) {
      if (known.magic == magic) return {FileSystemKind::kNetwork, known.name};
    }
    return {};
  }

  uid_t user_id() const override { return ::getuid(); }

  bool group_is_private(gid_t group) const override {
    const uid_t me = ::getuid();
    std::vector<char> buffer(16384);
    struct passwd user_entry;
    struct passwd* user = nullptr;
    if (::getpwuid_r(me, &user_entry, buffer.data(), buffer.size(), &user) != 0 ||
        user == nullptr || user->pw_gid != group) {
      return false;
    }
    const std::string name = user->pw_name;
    std::vector<char> group_buffer(65536);
    struct group group_entry;
    struct group* found = nullptr;
    if (::getgrgid_r(group, &group_entry, group_buffer.data(), group_buffer.size(), &found) != 0 ||
        found == nullptr || name != found->gr_name) {
      return false;
    }
    for (char** member = found->gr_mem; *member != nullptr; ++member) {
      if (name != *member) return false;
    }
    return no_other_account_has(group, me);
  }

  // Whether no account but `me` has `group` as its primary group: the
  // group's member list does not name those (useradd -g), yet they write
  // what the group may. The account database is walked whole (it may be a
  // directory service), once per process and group: the answer is kept;
  // reached only for a folder or file that its group may write.
  static bool no_other_account_has(gid_t group, uid_t me) {
    static std::mutex walking;
    static std::map<std::pair<gid_t, uid_t>, bool> known;
    std::lock_guard lock(walking);
    if (auto it = known.find({group, me}); it != known.end()) return it->second;
    const bool alone = walk_accounts_for(group, me);
    known.emplace(std::pair{group, me}, alone);
    return alone;
  }

  // no_other_account_has's walk (its caller holds the lock getpwent needs).
  static bool walk_accounts_for(gid_t group, uid_t me) {
    ::setpwent();
    std::vector<char> buffer(16384);
    bool alone = true;
    for (;;) {
      struct passwd entry;
      struct passwd* account = nullptr;
      const int rc = ::getpwent_r(&entry, buffer.data(), buffer.size(), &account);
      if (rc == ERANGE && buffer.size() < (1u << 20)) {
        buffer.resize(buffer.size() * 2);
        continue;
      }
      if (rc != 0 || account == nullptr) {
        alone = alone && (rc == 0 || rc == ENOENT);  // the end, not a failed walk
        break;
      }
      if (account->pw_gid == group && account->pw_uid != me) {
        alone = false;
        break;
      }
    }
    ::endpwent();
    return alone;
  }

  ChangeWatch* change_watch() const override { return process_change_watch(); }
};

}  // namespace

Status Env::write_file_atomic(const std::string& path, std::span<const std::uint8_t> data,
                              bool sync, mode_t mode) {
  const std::string temp = temp_name_for(path);
  auto file = new_writable_file(temp, mode);
  if (!file) return file.status();
  Status s = (*file)->append(data);
  if (s.is_ok() && sync) s = (*file)->sync();
  if (s.is_ok()) s = (*file)->close();
  file->reset();
  if (s.is_ok()) {
    s = rename(temp, path);
    if (s.is_ok()) return s;
  }
  // Nothing half-written stays behind for a later reader to trip over.
  (void)remove_file(temp);
  return s;
}

Env& Env::posix() {
  static PosixEnv env;
  return env;
}

}  // namespace kcache
