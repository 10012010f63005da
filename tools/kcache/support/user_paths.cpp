#include "support/user_paths.h"

#include <kcache/package.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "env/unique_fd.h"

namespace kcache::tool {
namespace {

// "a FIFO", "a folder", ...: what a file that is not a regular one is.
std::string kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "not a regular file";
}

std::string mib(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string errno_text(int err) { return std::strerror(err); }

// <dir>/.<name>.kcache-tmp-<random>: hidden, beside `path` (so the rename
// stays on one file system), and not guessable in advance.
std::string temp_name_for(const std::string& path) {
  // getrandom(2), not std::random_device: its CPU probe traps to the
  // hypervisor here (~40 us a process). Without entropy, a clock and a
  // counter (the name is then only unique; the file is opened O_EXCL).
  std::uint64_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    static std::uint64_t counter = 0;
    random =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (++counter << 48);
  }
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.parent_path();
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random));
  std::string name(1, '.');  // appended, not joined with +: gcc 12 warns wrongly
  name.append(target.filename().string()).append(".kcache-tmp-").append(suffix);
  return dir.empty() ? name : (dir / name).string();
}

Status write_all(int fd, std::span<const std::uint8_t> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error(errno_text(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return Status::ok();
}

// A new file beside `path` under a random name (`temp`): O_EXCL, so a
// file or a link planted at the name is never reused. -1 with errno set.
int create_beside(const std::string& path, mode_t mode, std::string& temp) {
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp = temp_name_for(path);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

}  // namespace

Result<std::string> read_input_file(const std::string& path, const std::string& what,
                                    std::uint64_t max_bytes, std::string_view bounded) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then
  // refuses it. Links are followed: the path is the user's own.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return Status::io_error("cannot read " + what + ": " + errno_text(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return Status::io_error("cannot read " + what + ": " + errno_text(errno));
  }
  if (S_ISDIR(st.st_mode)) return Status::io_error("cannot read " + what + ": it is a directory");
  if (!S_ISREG(st.st_mode)) {
    return Status::io_error("cannot read " + what + ": it is " + kind_of(st.st_mode) +
                            ", and kcache reads only regular files");
  }
  const auto too_large = [&] {
    return Status::io_error("cannot read " + what + ": it is larger than " + mib(max_bytes) +
                            ", the limit for " + std::string(bounded));
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) return too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error("cannot read " + what + ": " + errno_text(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) return too_large();  // it grew while being read
  }
  return text;
}

Status check_output_path(const std::string& path, const std::string& what) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    // Not there (the usual case), or not reachable: the write says why.
    return Status::ok();
  }
  if (S_ISREG(st.st_mode)) return Status::ok();
  if (S_ISLNK(st.st_mode)) {
    return Status::io_error(
        what + " is a symbolic link; kcache does not write through links (name the file itself)");
  }
  return Status::io_error(what + " is " + kind_of(st.st_mode) +
                          "; kcache writes only regular files and does not replace "
                          "anything else");
}

Status check_package_output(const std::string& path, const std::string& what) {
  if (Status s = check_output_path(path, what); !s.is_ok()) return s;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) return Status::ok();  // not there, or the write says why
  std::uint8_t head[8] = {};
  const ssize_t n = ::pread(fd.get(), head, sizeof head, 0);
  if (n <= 0 || starts_as_package({head, static_cast<std::size_t>(n)})) return Status::ok();
  return Status::io_error(what + " is a file that is not a kcache package; kcache does not " +
                          "replace it (remove it, or name another file)");
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error) && !error;
}

Status check_can_create(const std::string& path, const std::string& what) {
  std::string probe;
  UniqueFd fd(create_beside(path, 0600, probe));
  if (fd.get() < 0) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    return Status::io_error("cannot write " + what + ": cannot create a file in " +
                            (folder.empty() ? std::string(".") : folder) + ": " +
                            errno_text(errno));
  }
  (void)::unlink(probe.c_str());
  return Status::ok();
}

Status make_folders(const std::string& path, mode_t mode) {
  std::filesystem::path made;
  for (const auto& part : std::filesystem::path(path).lexically_normal()) {
    made /= part;
    if (part.empty() || part == made.root_path()) continue;
    if (::mkdir(made.c_str(), mode) == 0) {
      if (::chmod(made.c_str(), mode) != 0) {
        return Status::io_error("cannot set the mode of " + made.string() + ": " +
                                errno_text(errno));
      }
      continue;
    }
    struct stat st;
    if (errno != EEXIST || ::stat(made.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      const int err = errno == EEXIST ? ENOTDIR : errno;
      return Status::io_error("cannot create " + made.string() + ": " + errno_text(err));
    }
  }
  return Status::ok();
}

std::size_t remove_abandoned_outputs(const std::string& path) {
  const std::filesystem::path target(path);
  // Named first: "." + a temporary string makes gcc 12 -O2 warn
  // (-Wrestrict, wrongly) inside std::string's insert.
  const std::string file_name = target.filename().string();
  const std::string prefix = "." + file_name + ".kcache-tmp-";
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  const auto now = std::chrono::system_clock::now();
  std::error_code error;
  std::size_t removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string file = entry.path().string();
    struct stat seen;
    if (::lstat(file.c_str(), &seen) != 0 || !S_ISREG(seen.st_mode) || seen.st_uid != ::geteuid() ||
        now - std::chrono::system_clock::from_time_t(seen.st_mtime) < std::chrono::minutes(1)) {
      continue;
    }
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat opened;
    if (fd.get() < 0 || ::fstat(fd.get(), &opened) != 0 || opened.st_ino != seen.st_ino ||
        opened.st_dev != seen.st_dev || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      continue;  // a writer holds it, or it changed meanwhile
    }
    if (::unlink(file.c_str()) == 0) ++removed;
  }
  return removed;
}

Status write_output_file(const std::string& path, const std::string& what,
                         std::span<const std::uint8_t> bytes, bool sync, mode_t mode,
                         const std::function<Status(const std::string&)>& before_rename) {
  if (Status s = check_output_path(path, what); !s.is_ok()) return s;
  std::string temp;
  const int raw = create_beside(path, 0666, temp);
  if (raw < 0) return Status::io_error("cannot write " + what + ": " + errno_text(errno));
  UniqueFd fd(raw);
  // Held while it is written: remove_abandoned_outputs takes only what no
  // writer holds (one killed midway left its temporary behind).
  (void)::flock(fd.get(), LOCK_EX | LOCK_NB);
  // Not synced, as a compiler's own output is not: the rename makes it
  // whole or absent, and the cache (which is synced) still holds it. A
  // sync here would cost a hit a few milliseconds.
  Status s = write_all(fd.get(), bytes);
  if (s.is_ok() && mode != 0 && ::fchmod(fd.get(), mode) != 0) {
    s = Status::io_error(errno_text(errno));
  }
  if (s.is_ok() && sync && ::fdatasync(fd.get()) != 0) s = Status::io_error(errno_text(errno));
  // Checked while still held (and so not taken for abandoned).
  if (s.is_ok() && before_rename) {
    if (Status checked = before_rename(temp); !checked.is_ok()) {
      (void)::unlink(temp.c_str());
      return checked;
    }
  }
  if (s.is_ok() && ::close(fd.release()) != 0) s = Status::io_error(errno_text(errno));
  if (s.is_ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    s = Status::io_error(errno_text(errno));
  }
  if (!s.is_ok()) {
    (void)::unlink(temp.c_str());
    return Status::io_error("cannot write " + what + ": " + s.message());
  }
  return Status::ok();
}

}  // namespace kcache::tool
