#include "store/user/folder_trust.h"

#include <utility>

#include "env/trusted_path.h"

namespace kcache::userlog {

bool FolderTrust::folder_writable() {
  MutexLock lock(mutex_);
  if (!folder_writable_) folder_writable_ = folder_.env.check_writable(folder_.options.dir).is_ok();
  return *folder_writable_;
}

const std::string* FolderTrust::check_trust() {
  MutexLock lock(mutex_);
  const UserTierOptions& options = folder_.options;
  if (trust_.load(std::memory_order_relaxed) == kRefused) return &refusal_;
  if (options.shared) {
    trust_.store(kTrusted, std::memory_order_release);
    return nullptr;
  }
  if (auto reason = untrusted_folder_reason(options.dir, folder_.env)) {
    refusal_reason_ = "not used: another user could have written it (" + *reason +
                      "); fix the owner or mode, or set KCACHE_SHARED_CACHE=1 if it is shared "
                      "on purpose";
    refusal_ = "the user cache " + options.dir + " is " + refusal_reason_;
    trust_.store(kRefused, std::memory_order_release);
    folder_.log.warn_once("UserDb:untrusted:" + options.dir, "UserDb",
                          "The user cache " + options.dir + " is " + refusal_reason_);
    return &refusal_;
  }
  trust_.store(folder_.env.file_info(options.dir).is_ok() ? kTrusted : kAbsent,
               std::memory_order_release);
  return nullptr;
}

Status FolderTrust::ensure_dir(const std::string& dir) {
  {
    MutexLock lock(mutex_);
    if (created_dirs_.contains(dir)) return Status::ok();
  }
  if (Status s = folder_.env.create_dirs(dir, folder_.folder_mode()); !s.is_ok()) {
    return s;
  }
  if (const std::string* refused = check_trust_unless_trusted()) {
    return Status::not_supported(*refused);
  }
  MutexLock lock(mutex_);
  created_dirs_.insert(dir);
  return Status::ok();
}

void FolderTrust::warn_if_network() {
  {
    MutexLock lock(mutex_);
    if (std::exchange(network_checked_, true)) return;
  }
  const std::string& dir = folder_.options.dir;
  const FileSystemInfo fs = folder_.env.file_system(dir);
  if (fs.kind == FileSystemKind::kNetwork) {
    folder_.log.warn_once("UserDb:network:" + dir, "UserDb",
                          "The user cache " + dir + " is on a network file system (" + fs.name +
                              "): entries are still stored and served, but every hit reads over "
                              "the network and entries written on other machines may be seen "
                              "late. For speed, put the cache on a local disk "
                              "(KCACHE_CUSTOM_CACHE_DIR)");
  } else if (fs.kind == FileSystemKind::kFuse) {
    folder_.log.debug("UserDb", "the user cache " + dir + " is on FUSE (perhaps sshfs)");
  }
}

}  // namespace kcache::userlog
