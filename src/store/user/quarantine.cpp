#include "store/user/quarantine.h"

#include "store/user/user_log.h"

namespace kcache {

std::string Quarantine::free_name(const std::string& db, const std::string& what) const {
  const std::string stem =
      folder_ + "/" + (db.empty() ? what : db + "." + what) + "." + std::to_string(env_.now_unix());
  std::string target = stem + ".bad";
  for (int n = 1; env_.file_info(target).is_ok() && n < 1000; ++n) {
    target = stem + "." + std::to_string(n) + ".bad";
  }
  return target;
}

Status Quarantine::make_folder() const {
  // A link named quarantine (or a file) is moved aside rather than written
  // through: bad bytes must not land in a folder someone else chose.
  if (auto info = env_.file_info(folder_); info && info->type != FileType::kDirectory) {
    const std::string aside = folder_ + "." + std::to_string(env_.now_unix()) + ".bad";
    if (Status s = env_.rename(folder_, aside); !s.is_ok()) return s;
  }
  return env_.create_dirs(folder_, userlog::kFolderMode);
}

Status Quarantine::keep_copy(const std::string& db, const std::string& what,
                             std::span<const std::uint8_t> bytes) const {
  if (Status s = make_folder(); !s.is_ok()) return s;
  return env_.write_file_atomic(free_name(db, what), bytes, /*sync=*/false, 0600);
}

bool Quarantine::move_in(const std::string& db, const std::string& path) const {
  const std::string base = path.substr(path.find_last_of('/') + 1);
  const std::string target = free_name(db, base);
  Status moved = make_folder();
  if (moved.is_ok()) moved = env_.rename(path, target);
  if (moved.is_ok()) return true;
  if (env_.remove_file(path).is_ok()) return false;
  (void)env_.remove_all(path);  // a folder where a file belongs
  return false;
}

}  // namespace kcache
