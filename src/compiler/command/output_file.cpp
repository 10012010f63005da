#include "compiler/command/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "env/unique_fd.h"

namespace kcache {
namespace {

// One read at most: the deadline is checked between reads.
constexpr std::size_t kReadChunk = 8u << 20;
// Read past the size fstat gave, to see the end (or a file still growing).
constexpr std::uint64_t kReadSlack = 64u << 10;

// "a FIFO", "a folder", ...: what a non-regular file is, for messages.
std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "something other than a regular file";
}

// " (to /dev/zero)" for a link at `path`; "" when it cannot be read.
std::string link_target(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) return {};
  return " (to " + std::string(target, static_cast<std::size_t>(n)) + ")";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes) + " bytes";
}

// What open_regular found at a path.
struct Opened {
  enum class Found { kRegular, kMissing, kNotRegular, kError };
  Found found = Found::kError;
  UniqueFd fd;             // open when kRegular
  std::uint64_t size = 0;  // fstat's size when kRegular
  std::string what;        // kNotRegular: "a FIFO", "a symbolic link (to /dev/zero)"
  int error = 0;           // kError: errno
  std::string failed;      // kError: "opened", "examined"
};

// Opens `path` as a regular file without following a link or blocking:
// O_NONBLOCK makes the open of a FIFO return at once (and a read of it
// would not wait either), O_NOFOLLOW fails on a link, fstat tells the rest.
Opened open_regular(const std::string& path) {
  Opened result;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    struct stat st;
    if (err == ENOENT) {
      result.found = Opened::Found::kMissing;
    } else if (err == ELOOP && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      result.found = Opened::Found::kNotRegular;
      result.what = "a symbolic link" + link_target(path);
    } else {
      result.error = err;
      result.failed = "opened";
    }
    return result;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    result.error = errno;
    result.failed = "examined";
    return result;
  }
  if (!S_ISREG(st.st_mode)) {
    result.found = Opened::Found::kNotRegular;
    result.what = kind_of(st.st_mode);
    return result;
  }
  result.found = Opened::Found::kRegular;
  result.fd = std::move(fd);
  result.size = static_cast<std::uint64_t>(st.st_size);
  return result;
}

Status too_large(std::uint64_t max_bytes) {
  return Status::compile_error(
      "wrote more than " + size_text(max_bytes) + " to {out} (the limit for a compiler's output)",
      {});
}

}  // namespace

Result<std::vector<std::uint8_t>> read_compiler_output(
    const std::string& path, std::uint64_t max_bytes,
    std::chrono::steady_clock::time_point deadline) {
  Opened opened = open_regular(path);
  switch (opened.found) {
    case Opened::Found::kRegular:
      break;
    case Opened::Found::kMissing:
      return Status::compile_error("wrote no output file ({out})", {});
    case Opened::Found::kNotRegular:
      return Status::compile_error("left " + opened.what + " at {out}, not a regular file", {});
    case Opened::Found::kError:
      return Status::io_error("left an output file ({out}) that cannot be " + opened.failed + ": " +
                              std::strerror(opened.error));
  }
  const UniqueFd& fd = opened.fd;
  if (opened.size > max_bytes) return too_large(max_bytes);

  std::vector<std::uint8_t> bytes;
  // The size fstat saw is a hint (the compiler, or something it left
  // running, may still be writing); the bound is what counts.
  bytes.reserve(static_cast<std::size_t>(opened.size + 1));
  for (;;) {
    // Only once a chunk is read: a small file is never late.
    if (bytes.size() >= kReadChunk && std::chrono::steady_clock::now() >= deadline) {
      return Status::timeout("left an output file ({out}) that could not be read in time (" +
                             std::to_string(bytes.size()) + " bytes read)");
    }
    // What fstat announced plus a little, so a small file costs one small
    // read and the end is seen; one byte past the bound tells "exactly
    // max_bytes" from "more".
    const std::size_t at = bytes.size();
    const std::uint64_t announced = opened.size > at ? opened.size - at : 0;
    const std::size_t want = static_cast<std::size_t>(
        std::min({max_bytes + 1 - at, announced + kReadSlack, std::uint64_t{kReadChunk}}));
    bytes.resize(at + want);
    const ssize_t n = ::read(fd.get(), bytes.data() + at, want);
    if (n < 0) {
      const int err = errno;
      bytes.resize(at);
      if (err == EINTR) continue;
      return Status::io_error("left an output file ({out}) that cannot be read: " +
                              std::string(std::strerror(err)));
    }
    bytes.resize(at + static_cast<std::size_t>(n));
    if (n == 0) break;
    if (bytes.size() > max_bytes) return too_large(max_bytes);
  }
  if (bytes.empty()) return Status::compile_error("wrote an empty output file ({out})", {});
  return bytes;
}

std::string read_compiler_log(const std::string& path, std::uint64_t max_bytes) {
  Opened opened = open_regular(path);
  switch (opened.found) {
    case Opened::Found::kRegular:
      break;
    case Opened::Found::kMissing:
      return {};
    case Opened::Found::kNotRegular:
      return "[kcache: the compiler left " + opened.what +
             " in place of its log, not a regular file]\n";
    case Opened::Found::kError:
      return "[kcache: the compiler's log cannot be " + opened.failed + ": " +
             std::strerror(opened.error) + "]\n";
  }
  const UniqueFd& fd = opened.fd;
  std::string text;
  text.reserve(static_cast<std::size_t>(std::min(opened.size, max_bytes)));
  char buffer[64 * 1024];
  while (text.size() < max_bytes) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buffer, max_bytes - text.size()));
    const ssize_t n = ::read(fd.get(), buffer, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return text + "\n[kcache: the rest of the log cannot be read: " + std::strerror(errno) +
             "]\n";
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  char probe = 0;
  ssize_t more = 0;
  do {
    more = ::read(fd.get(), &probe, 1);
  } while (more < 0 && errno == EINTR);
  if (more > 0) text += "\n[kcache: the log was cut at " + size_text(max_bytes) + "]\n";
  return text;
}

}  // namespace kcache
