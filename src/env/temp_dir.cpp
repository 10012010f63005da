#include "env/temp_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "env/unique_fd.h"

namespace kcache {
namespace {

// The lock is made under this name and renamed to kTempDirLockName once
// held, so a reclaimer never finds the lock file before it is locked.
constexpr const char* kPendingLockName = ".kcache-owner.lock.new";

// The prefixes kcache used before folders had an owner lock.
constexpr std::string_view kUnlockedPrefixes[] = {"kcache-compile-", "kcache-cl-headers-",
                                                  "kcache-hip-", "kcache-version-"};

// Deeper folders are left in place rather than use a descriptor per level.
constexpr int kMaxDepth = 64;

std::string temp_base() {
  const char* base = std::getenv("TMPDIR");
  return base && base[0] ? base : "/tmp";
}

// The prefix ("kcache-compile-") of a name TempDir::create can have made
// ("kcache-compile-a1B2c3"), or "" for any other name.
std::string_view temp_prefix(std::string_view name) {
  constexpr std::size_t kSuffix = 6;  // mkdtemp's XXXXXX
  if (!name.starts_with("kcache-") || name.size() < 8 + kSuffix) return {};
  for (char c : name.substr(name.size() - kSuffix)) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return {};
  }
  std::string_view prefix = name.substr(0, name.size() - kSuffix);
  return prefix.ends_with('-') ? prefix : std::string_view{};
}

std::vector<std::string> names_in(int dir) {
  std::vector<std::string> names;
  const int copy = ::dup(dir);  // closedir closes the descriptor it was given
  if (copy < 0) return names;
  DIR* stream = ::fdopendir(copy);
  if (stream == nullptr) {
    ::close(copy);
    return names;
  }
  while (const struct dirent* entry = ::readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(stream);
  return names;
}

// Removes everything inside the open folder `dir` (not `dir` itself)
// without following a link. False when something stays.
bool remove_contents(int dir, int depth) {
  bool all_gone = true;
  // Names first: removing while readdir walks leaves what it returns open.
  for (const std::string& name : names_in(dir)) {
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      all_gone = all_gone && errno == ENOENT;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (depth >= kMaxDepth) {
        all_gone = false;
        continue;
      }
      UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat opened;
      if (sub.get() < 0 && errno == EACCES && st.st_uid == ::geteuid()) {
        // A compiler may leave a folder of mode 0 behind; it is ours.
        (void)::fchmodat(dir, name.c_str(), 0700, 0);
        sub =
            UniqueFd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      }
      // The folder lstat saw, not one swapped in meanwhile.
      if (sub.get() < 0 || ::fstat(sub.get(), &opened) != 0 || opened.st_dev != st.st_dev ||
          opened.st_ino != st.st_ino) {
        all_gone = false;
        continue;
      }
      if ((opened.st_mode & 0700) != 0700 && opened.st_uid == ::geteuid()) {
        (void)::fchmod(sub.get(), opened.st_mode | 0700);  // so its entries can be removed
      }
      all_gone = remove_contents(sub.get(), depth + 1) && all_gone;
      if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) all_gone = false;
    } else if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) {
      all_gone = false;
    }
  }
  return all_gone;
}

// Whether the folder `name` under `base`, open as `dir` and lstat()ed as
// `st`, is abandoned. When its owner lock is taken here, `lock` keeps it
// (so that no other reclaimer starts on it) until the folder is gone.
bool abandoned(int dir, std::string_view prefix, const struct stat& st,
               std::chrono::seconds unlocked_age, UniqueFd& lock) {
  const int fd =
      ::openat(dir, kTempDirLockName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  const int err = errno;
  lock = UniqueFd(fd);
  if (fd < 0) {
    if (err != ENOENT) return false;
    bool known = false;
    for (std::string_view unlocked : kUnlockedPrefixes) known = known || prefix == unlocked;
    return known && std::time(nullptr) - st.st_mtime >= unlocked_age.count();
  }
  struct stat lock_st;
  if (::fstat(lock.get(), &lock_st) != 0 || !S_ISREG(lock_st.st_mode) ||
      lock_st.st_uid != ::geteuid()) {
    return false;
  }
  // Taken at once only when no process holds it: the owner is dead.
  return ::flock(lock.get(), LOCK_EX | LOCK_NB) == 0;
}

void reclaim_once(const std::string& base) {
  static std::mutex mutex;
  static auto* done = new std::set<std::string>();  // never destroyed: used at exit
  {
    std::lock_guard<std::mutex> guard(mutex);
    if (!done->insert(base).second) return;
  }
  (void)reclaim_abandoned_temp_dirs(base);
}

// Creates and locks the owner lock in `path`; its descriptor, or -1 when
// the file system refuses (the folder then works, unlocked).
int lock_folder(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) return -1;
  UniqueFd lock(::openat(dir.get(), kPendingLockName,
                         O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (lock.get() < 0) return -1;
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::renameat(dir.get(), kPendingLockName, dir.get(), kTempDirLockName) != 0) {
    (void)::unlinkat(dir.get(), kPendingLockName, 0);
    return -1;
  }
  return lock.release();
}

}  // namespace

std::size_t reclaim_abandoned_temp_dirs(const std::string& base,
                                        std::chrono::seconds unlocked_age) {
  // The base itself may be a link ($TMPDIR -> /scratch/tmp): the user named it.
  UniqueFd base_dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (base_dir.get() < 0) return 0;
  std::size_t removed = 0;
  for (const std::string& name : names_in(base_dir.get())) {
    const std::string_view prefix = temp_prefix(name);
    if (prefix.empty()) continue;
    struct stat st;
    if (::fstatat(base_dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    UniqueFd dir(
        ::openat(base_dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat opened;
    if (dir.get() < 0 || ::fstat(dir.get(), &opened) != 0 || opened.st_dev != st.st_dev ||
        opened.st_ino != st.st_ino) {
      continue;
    }
    UniqueFd lock(-1);
    if (!abandoned(dir.get(), prefix, st, unlocked_age, lock)) continue;
    (void)remove_contents(dir.get(), 1);
    if (::unlinkat(base_dir.get(), name.c_str(), AT_REMOVEDIR) == 0) ++removed;
  }
  return removed;
}

Result<TempDir> TempDir::create(const std::string& prefix) {
  const std::string base = temp_base();
  reclaim_once(base);
  std::string pattern = base + "/" + prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Status::io_error("cannot create a temporary folder " + pattern + ": " +
                            std::strerror(errno));
  }
  return TempDir(pattern, lock_folder(pattern));
}

TempDir::TempDir(TempDir&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {
  other.path_.clear();
}

TempDir::~TempDir() {
  if (!path_.empty()) {
    UniqueFd dir(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() >= 0) (void)remove_contents(dir.get(), 1);
    (void)::rmdir(path_.c_str());
  }
  // Last: until the folder is gone, no reclaimer may take it for abandoned.
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace kcache
