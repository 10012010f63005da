#include "store/user/user_folder.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "store/user/use_table.h"

namespace kcache::userlog {

std::string UserFolder::log_path(const std::string& name) const {
  return options.dir + "/" + name + std::string(kLogSuffix);
}

std::string UserFolder::hint_path(const std::string& name) const {
  return options.dir + "/" + name + std::string(kHintSuffix);
}

std::string UserFolder::use_path(const std::string& name) const {
  return options.dir + "/" + name + std::string(kUseSuffix);
}

Result<std::vector<std::string>> UserFolder::list_databases() const {
  auto entries = env.list_dir(options.dir);
  if (!entries) {
    if (entries.status().code() == StatusCode::kNotFound) return std::vector<std::string>();
    return entries.status();
  }
  std::set<std::string> names;
  for (const auto& e : *entries) {
    for (std::string_view suffix : {kLogSuffix, kHintSuffix}) {
      if (e.name.ends_with(suffix) && e.name.size() > suffix.size()) {
        names.insert(e.name.substr(0, e.name.size() - suffix.size()));
      }
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

UserFolder::FileSizes UserFolder::file_sizes(const std::string& name) const {
  FileSizes sizes;
  for (auto [path, size] :
       {std::pair{log_path(name), &sizes.log}, std::pair{hint_path(name), &sizes.hint},
        std::pair{use_path(name), &sizes.use}}) {
    auto info = env.file_info(path);
    if (info && info->type == FileType::kRegular) *size = info->size;
  }
  return sizes;
}

Status UserFolder::opened_own_file(const std::string& path, const File& file) const {
  auto info = env.file_info(path);
  if (!info) return info.status();
  if (info->type == FileType::kSymlink) {
    return Status::corruption(path +
                              " is a symbolic link; kcache does not follow links in its cache");
  }
  if (!(info->id == file.id())) return Status::io_error(path + " was replaced as it was opened");
  return Status::ok();
}

Result<std::unique_ptr<FileLock>> UserFolder::lock_byte(const std::string& db,
                                                        std::uint64_t offset) const {
  const std::string path = options.dir + "/" + db + std::string(kLocksSuffix);
  // A link there is moved aside first: locking opens the file read-write
  // and creates it, which must never happen at a link's target.
  if (auto info = env.file_info(path); info && info->type == FileType::kSymlink) {
    events.on_corrupt(kTierName, path, Status::corruption(path + " is a symbolic link"));
    quarantine.move_in(db, path);
  }
  auto lock = env.try_lock(path, offset, file_mode());
  if (auto info = env.file_info(path); !lock && info && info->type != FileType::kRegular) {
    events.on_corrupt(kTierName, path,
                      Status::corruption("not a lock file: " + lock.status().message()));
    quarantine.move_in(db, path);
    lock = env.try_lock(path, offset, file_mode());
  }
  return lock;
}

Result<std::unique_ptr<FileLock>> UserFolder::append_lock(const std::string& name,
                                                          std::chrono::milliseconds wait) const {
  return wait_for_lock(name, kAppendLockOffset, wait, "writing to " + log_path(name));
}

Result<std::unique_ptr<FileLock>> UserFolder::wait_for_lock(const std::string& db,
                                                            std::uint64_t offset,
                                                            std::chrono::milliseconds wait,
                                                            const std::string& doing) const {
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

}  // namespace kcache::userlog
