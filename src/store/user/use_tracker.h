// When each entry of the user tier was last used, kept in each database's
// use table (store/user/use_table.h): a hit's minute, a put's stamp, and
// the table opened, or made anew larger when it fills.
#pragma once

#include <cstdint>
#include <string>

#include "store/user/use_table.h"
#include "store/user/user_db.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class UseTracker {
 public:
  explicit UseTracker(const UserFolder& folder) : folder_(folder) {}
  UseTracker(const UseTracker&) = delete;
  UseTracker& operator=(const UseTracker&) = delete;

  // Records that `found`'s key of `db` was used now (a hit): once a minute
  // per entry and process, a load and a store in the shared table (none
  // while `found.used_minute`, which this moves, says it was done this
  // minute); no system call.
  void record_use(const std::string& name, Db& db, Db::Found& found);
  // The table of `db`: the one open, or, when there is none or it was
  // retired, the one on disk (tried once a minute, or now when `force`).
  UseTable* use_table(const std::string& name, Db& db, std::uint32_t now, bool force);
  // A put's use: the table made, or rebuilt larger when it fills; the
  // caller holds the append lock.
  void stamp_use(const std::string& name, Db& db, const CacheKey& key);

 private:
  const UserFolder& folder_;
};

}  // namespace kcache::userlog
