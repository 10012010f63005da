// Writes to the user tier's logs: an entry or a removal appended under the
// append lock, then its hint record; the database made ready for it first
// (created, its hint rebuilt or caught up with the log, damaged bytes a
// killed writer left cut off); and a record found damaged reported,
// copied to quarantine/ and removed.
#pragma once

#include <memory>
#include <set>
#include <span>
#include <string>

#include "base/byte_buffer.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "store/user/folder_trust.h"
#include "store/user/use_tracker.h"
#include "store/user/user_db.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class Appender {
 public:
  Appender(const UserFolder& folder, FolderTrust& trust, UserDbs& dbs, UseTracker& uses)
      : folder_(folder), trust_(trust), dbs_(dbs), uses_(uses) {}
  Appender(const Appender&) = delete;
  Appender& operator=(const Appender&) = delete;

  // Appends `bytes` (an encoded entry, or a removal) for `key` to the log
  // of `name`, then its hint record. A failed append is cut off again.
  Status append(const std::string& name, const CacheKey& key, std::span<const std::uint8_t> bytes,
                bool removal = false);

  // append() once the append lock is held and `d` caught up.
  Status append_locked(const std::string& name, Db& d, const CacheKey& key,
                       std::span<const std::uint8_t> bytes, bool removal);

  // The database `name` ready for an append; the caller holds its append
  // lock. Creates the log when missing (a bad one is moved aside first),
  // rebuilds a hint that does not match it, and catches the hint up with
  // the log: records a killed writer appended without their hint records
  // are added, and damaged bytes that end the log (a write cut short) are
  // cut off.
  Result<std::shared_ptr<Db>> db_for_append(const std::string& name) EXCLUDES(mutex_);

  // Reports a record that failed its checks, copies its bytes to
  // quarantine/, and appends a removal so that no one reads it again (when
  // the record is still its key's newest).
  void damaged(const std::string& name, const Generation& generation, const HintRecord& record,
               const ByteBuffer& bytes, const Status& problem);

 private:
  Result<std::shared_ptr<Db>> open_for_append(const std::string& name);

  // Brings the hint of `db` up to the log's end; the caller holds the
  // append lock.
  Status catch_up(const std::string& name, Db& db);
  // catch_up()'s hinting of the records the log holds from
  // `db.hinted_end` to `size`, with `db.mutex` held.
  Status hint_log_tail(const std::string& name, Db& db, std::uint64_t size) REQUIRES(db.mutex);

  const UserFolder& folder_;
  FolderTrust& trust_;
  UserDbs& dbs_;
  UseTracker& uses_;
  Mutex mutex_;
  // Databases whose killed compactions this process has swept (once each,
  // by the first append).
  std::set<std::string, std::less<>> swept_ GUARDED_BY(mutex_);
};

}  // namespace kcache::userlog
