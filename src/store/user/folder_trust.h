// Whether and how the user tier may use its folder: the trust judgement
// (a folder another user could write is refused unless the cache is
// shared), the folder made on the first write, whether this process may
// write in it, and the one warning for a network file system.
#pragma once

#include <atomic>
#include <optional>
#include <set>
#include <string>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class FolderTrust {
 public:
  explicit FolderTrust(const UserFolder& folder) : folder_(folder) {}
  FolderTrust(const FolderTrust&) = delete;
  FolderTrust& operator=(const FolderTrust&) = delete;

  // The reason the tier's folder is not used (said once), or nullptr when
  // it may be. Unless the cache is shared, a folder another user could
  // write is refused (env/trusted_path.h). The hot path is one atomic
  // load: the folder is judged on the first call, and a folder that did
  // not exist then is judged again (check_trust) when it is made or its
  // first log opened, so that a folder someone else made first is caught.
  const std::string* refusal() EXCLUDES(mutex_) {
    const int trust = trust_.load(std::memory_order_acquire);
    if (trust == kTrusted || trust == kAbsent) return nullptr;
    return trust == kRefused ? &refusal_ : check_trust();
  }
  // Judges the folder now (a refusal is final).
  const std::string* check_trust() EXCLUDES(mutex_);
  // check_trust(), unless the folder was judged trusted already: for when
  // it exists now (made, or a log opened in it).
  const std::string* check_trust_unless_trusted() EXCLUDES(mutex_) {
    if (trust_.load(std::memory_order_acquire) == kTrusted) return nullptr;
    return check_trust();
  }
  // The refusal as verify reports it: "not used: ..." (set with it).
  const std::string& refusal_reason() const { return refusal_reason_; }

  // Makes `dir` (once per process) and judges the folder again unless it
  // is trusted.
  Status ensure_dir(const std::string& dir) EXCLUDES(mutex_);

  // Whether this process may write in the tier's folder (asked once).
  bool folder_writable() EXCLUDES(mutex_);

  // Once per tier: a cache on a network file system works (records are
  // checked; locks go through the lock manager) but every hit reads over
  // the network.
  void warn_if_network() EXCLUDES(mutex_);

 private:
  const UserFolder& folder_;
  Mutex mutex_;  // guards the members below that say so
  std::set<std::string> created_dirs_ GUARDED_BY(mutex_);
  std::optional<bool> folder_writable_ GUARDED_BY(mutex_);
  // kAbsent: judged when it did not exist, by the folders above it.
  static constexpr int kUnknown = 0, kAbsent = 1, kTrusted = 2, kRefused = 3;
  std::atomic<int> trust_{kUnknown};
  // Written under mutex_, read without it once trust_ says kRefused.
  std::string refusal_;         // set once, before trust_ becomes kRefused
  std::string refusal_reason_;  // the same, for verify: "not used: ..."

  bool network_checked_ GUARDED_BY(mutex_) = false;
};

}  // namespace kcache::userlog
