#include "store/user/user_tier_impl.h"

#include <algorithm>
#include <thread>

#include "env/trusted_path.h"

namespace kcache::userlog {

Status UserTier::opened_own_file(const std::string& path, const File& file) const {
  auto info = env_.file_info(path);
  if (!info) return info.status();
  if (info->type == FileType::kSymlink) {
    return Status::corruption(path +
                              " is a symbolic link; kcache does not follow links in its cache");
  }
  if (!(info->id == file.id())) return Status::io_error(path + " was replaced as it was opened");
  return Status::ok();
}

Result<std::unique_ptr<FileLock>> UserTier::lock_byte(const std::string& db, std::uint64_t offset) {
  const std::string path = options_.dir + "/" + db + std::string(kLocksSuffix);
  // A link there is moved aside first: locking opens the file read-write
  // and creates it, which must never happen at a link's target.
  if (auto info = env_.file_info(path); info && info->type == FileType::kSymlink) {
    events_.on_corrupt(this->name(), path, Status::corruption(path + " is a symbolic link"));
    quarantine_.move_in(db, path);
  }
  auto lock = env_.try_lock(path, offset, file_mode());
  if (auto info = env_.file_info(path); !lock && info && info->type != FileType::kRegular) {
    events_.on_corrupt(this->name(), path,
                       Status::corruption("not a lock file: " + lock.status().message()));
    quarantine_.move_in(db, path);
    lock = env_.try_lock(path, offset, file_mode());
  }
  return lock;
}

Result<std::unique_ptr<FileLock>> UserTier::append_lock(const std::string& name,
                                                        std::chrono::milliseconds wait) {
  return wait_for_lock(name, kAppendLockOffset, wait, "writing to " + log_path(name));
}

Result<std::unique_ptr<FileLock>> UserTier::wait_for_lock(const std::string& db,
                                                          std::uint64_t offset,
                                                          std::chrono::milliseconds wait,
                                                          const std::string& doing) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = std::chrono::microseconds(100);
  while (true) {
    auto lock = lock_byte(db, offset);
    if (!lock || *lock) return lock;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::timeout("another process has been " + doing + " for " +
                             std::to_string(wait.count() / 1000) + " s");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

bool UserTier::folder_writable() {
  std::lock_guard lock(mutex_);
  if (!folder_writable_) folder_writable_ = env_.check_writable(options_.dir).is_ok();
  return *folder_writable_;
}

const std::string* UserTier::check_trust() {
  std::lock_guard lock(mutex_);
  if (trust_.load(std::memory_order_relaxed) == kRefused) return &refusal_;
  if (options_.shared) {
    trust_.store(kTrusted, std::memory_order_release);
    return nullptr;
  }
  if (auto reason = untrusted_folder_reason(options_.dir, env_)) {
    refusal_reason_ = "not used: another user could have written it (" + *reason +
                      "); fix the owner or mode, or set KCACHE_SHARED_CACHE=1 if it is shared "
                      "on purpose";
    refusal_ = "the user cache " + options_.dir + " is " + refusal_reason_;
    trust_.store(kRefused, std::memory_order_release);
    log_.warn_once("UserDb:untrusted:" + options_.dir, "UserDb",
                   "The user cache " + options_.dir + " is " + refusal_reason_);
    return &refusal_;
  }
  trust_.store(env_.file_info(options_.dir).is_ok() ? kTrusted : kAbsent,
               std::memory_order_release);
  return nullptr;
}

Status UserTier::ensure_dir(const std::string& dir) {
  {
    std::lock_guard lock(mutex_);
    if (created_dirs_.contains(dir)) return Status::ok();
  }
  if (Status s = env_.create_dirs(dir, folder_mode()); !s.is_ok()) {
    return s;
  }
  if (trust_.load(std::memory_order_acquire) != kTrusted) {
    if (const std::string* refused = check_trust()) return Status::not_supported(*refused);
  }
  std::lock_guard lock(mutex_);
  created_dirs_.insert(dir);
  return Status::ok();
}

void UserTier::warn_if_network() {
  {
    std::lock_guard lock(mutex_);
    if (std::exchange(network_checked_, true)) return;
  }
  const FileSystemInfo fs = env_.file_system(options_.dir);
  if (fs.kind == FileSystemKind::kNetwork) {
    log_.warn_once("UserDb:network:" + options_.dir, "UserDb",
                   "The user cache " + options_.dir + " is on a network file system (" + fs.name +
                       "): entries are still stored and served, but every hit reads over the "
                       "network and entries written on other machines may be seen late. For "
                       "speed, put the cache on a local disk (KCACHE_CUSTOM_CACHE_DIR)");
  } else if (fs.kind == FileSystemKind::kFuse) {
    log_.debug("UserDb", "the user cache " + options_.dir + " is on FUSE (perhaps sshfs)");
  }
}

std::string UserTier::log_path(const std::string& name) const {
  return options_.dir + "/" + name + std::string(kLogSuffix);
}

std::string UserTier::hint_path(const std::string& name) const {
  return options_.dir + "/" + name + std::string(kHintSuffix);
}

void UserTier::quarantine_file(const std::string& db, const std::string& path,
                               const Status& problem) {
  events_.on_corrupt(this->name(), path, problem);
  quarantine_.move_in(db, path);
  forget(db);
}

}  // namespace kcache::userlog
