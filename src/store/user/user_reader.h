// Reads of the user tier: a lookup (the index, then the mapped log or a
// pread, and the entry's checks), and every entry of a database for
// listing. A record that fails its checks is looked for in the log before
// it is reported and removed (the hint may be what is wrong).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/byte_buffer.h"
#include "store/tier.h"
#include "store/user/appender.h"
#include "store/user/folder_trust.h"
#include "store/user/use_tracker.h"
#include "store/user/user_db.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class UserReader {
 public:
  UserReader(const UserFolder& folder, FolderTrust& trust, UserDbs& dbs, UseTracker& uses,
             Appender& appender)
      : folder_(folder), trust_(trust), dbs_(dbs), uses_(uses), appender_(appender) {}
  UserReader(const UserReader&) = delete;
  UserReader& operator=(const UserReader&) = delete;

  // The entry of `key` in database `name`, checked; nullopt on a miss
  // (a bad entry included).
  Result<std::optional<Entry>> get_from(const std::string& name, const CacheKey& key);

  // Reads the newest record of every key of `name` and calls `action` with
  // each entry that passes its checks (others are reported and removed).
  Status for_each_entry(const std::string& name,
                        const std::function<void(const Entry&, const HintRecord&)>& action);

 private:
  // Reads the record `record` of `db` and checks it: the entry, or what is
  // wrong with it (kCorruption; `bytes` then holds what was read, empty
  // when the log is shorter than the record), or an I/O error.
  Result<Entry> read_entry(const Db& db, const HintRecord& record, ByteBuffer& bytes);
  // read_entry(), and what follows from its answer: a record that fails
  // its checks is looked for in the log (the hint may be what is wrong),
  // and is reported and removed only when the log holds no good record of
  // its key elsewhere. nullopt: the entry is not served.
  // `found.checked_epoch` says whether the mapped record was checked in
  // full already, and is moved when it is now (Db::learnt keeps it).
  Result<std::optional<Entry>> read_checked(const std::string& name, Db& db, Db::Found& found);
  // For a record that failed its checks: reads the whole log (once per open
  // database) and, if it holds a good record of the key somewhere else, the
  // hint was wrong: what `db` knows is replaced by the scan, the hint is
  // rebuilt, and that record returned. A record that verifies is never
  // discarded because the hint misplaced it.
  std::optional<HintRecord> recheck_against_log(const std::string& name, Db& db,
                                                const HintRecord& record);

  const UserFolder& folder_;
  FolderTrust& trust_;
  UserDbs& dbs_;
  UseTracker& uses_;
  Appender& appender_;
};

}  // namespace kcache::userlog
