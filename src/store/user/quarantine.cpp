#include "store/user/quarantine.h"

#include "store/user/user_log.h"

namespace kcache {

std::string Quarantine::free_name(const std::string& db, const std::string& what) const {
  const std::string stem = folder_ + "/" + db + "." + what + "." + std::to_string(env_.now_unix());
  std::string target = stem + ".bad";
  for (int n = 1; env_.file_info(target).is_ok() && n < 1000; ++n) {
    target = stem + "." + std::to_string(n) + ".bad";
  }
  return target;
}

Status Quarantine::keep_copy(const std::string& db, const std::string& what,
                             std::span<const std::uint8_t> bytes) const {
  if (Status s = env_.create_dirs(folder_, userlog::kFolderMode); !s.is_ok()) return s;
  return env_.write_file_atomic(free_name(db, what), bytes, /*sync=*/false, 0600);
}

bool Quarantine::move_in(const std::string& db, const std::string& path) const {
  const std::string base = path.substr(path.find_last_of('/') + 1);
  const std::string target = free_name(db, base);
  Status moved = env_.create_dirs(folder_, userlog::kFolderMode);
  if (moved.is_ok()) moved = env_.rename(path, target);
  if (moved.is_ok()) return true;
  if (env_.remove_file(path).is_ok()) return false;
  (void)env_.remove_all(path);  // a folder where a file belongs
  return false;
}

}  // namespace kcache
