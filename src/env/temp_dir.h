// A fresh private folder (0700) under $TMPDIR or /tmp, removed with all it
// holds when the object dies. For compilers that need files on disk.
//
// A process killed by SIGKILL (or a crash) cannot remove its folders, so
// each one says whether its owner is alive: it holds a lock file,
// `.kcache-owner.lock`, flock()ed by its creator for the folder's whole life
// (O_CLOEXEC: compilers run in the folder do not inherit it). The kernel
// drops the lock when the owner dies, whatever its pid becomes later, so a
// process that can take the lock knows the owner is gone, and removes the
// folder (reclaim_abandoned_temp_dirs). The first TempDir::create of a
// process for a given base folder does that, once: one readdir of the base.
#pragma once

#include <kcache/status.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace kcache {

class TempDir {
 public:
  // Creates <base>/<prefix>XXXXXX, base being $TMPDIR (when set and not
  // empty) or /tmp, with its owner lock held. `prefix` must start with
  // "kcache-" and end with "-" for the folder to be reclaimed after a kill.
  // The first call of the process for a base first reclaims that base's
  // abandoned folders. kIoError when the folder cannot be made.
  static Result<TempDir> create(const std::string& prefix);

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  // Removes the folder and what it holds (links are removed, never
  // followed), then drops the owner lock.
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  TempDir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}
  std::string path_;
  int lock_fd_ = -1;
};

// The name of the owner lock inside each TempDir.
inline constexpr const char* kTempDirLockName = ".kcache-owner.lock";

// Folders made without an owner lock (by older kcache builds, or by a
// process killed in the instant between making a folder and locking it)
// are reclaimed only when their prefix is one kcache has used and they
// have not changed for this long.
inline constexpr std::chrono::seconds kUnlockedTempDirAge{3600};

// Removes the abandoned scratch folders directly under `base` and returns
// how many it removed. A folder is removed only if all of these hold:
//  - its name is "kcache-<name>-" followed by the 6 characters mkdtemp adds;
//  - lstat shows a folder (not a link) owned by this process's user;
//  - its owner lock exists and can be taken at once (its creator is dead);
//    or it has no lock, its prefix is kcache-compile-, kcache-cl-headers-,
//    kcache-hip- or kcache-version-, and it is older than `unlocked_age`.
// Removal goes through descriptors (openat/unlinkat with O_NOFOLLOW): a
// link inside is removed, never followed, and a folder swapped for a link
// meanwhile is not entered. Problems (a file that cannot be removed, an
// unreadable base) are skipped silently: this is housekeeping.
std::size_t reclaim_abandoned_temp_dirs(const std::string& base,
                                        std::chrono::seconds unlocked_age = kUnlockedTempDirAge);

}  // namespace kcache
