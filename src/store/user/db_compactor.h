// Rewrites a user-tier database's log without what is dead or evicted
// (store/user/log_compaction.h writes the new log), and commits it: the
// new log renamed into place, then its hint and its use table written.
// The eviction pass (maintenance.h) and verify's repair (user_verifier.h)
// compact through it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "store/user/appender.h"
#include "store/user/log_compaction.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class DbCompactor {
 public:
  DbCompactor(const UserFolder& folder, UserDbs& dbs, Appender& appender)
      : folder_(folder), dbs_(dbs), appender_(appender) {}
  DbCompactor(const DbCompactor&) = delete;
  DbCompactor& operator=(const DbCompactor&) = delete;

  // Writes a new log of `name` holding `records` (of `log`), and commits
  // it (commit_compaction); the caller holds the append lock.
  Status compact_records(const std::string& name, const File& log, std::vector<HintRecord> records);
  // Compacts `name` without the records at `evicted` offsets: what is
  // kept is copied without the append lock, which is then taken to copy
  // the records appended since and rename (records appended since the
  // pass looked are kept).
  Status compact_without(const std::string& name, const std::set<std::uint64_t>& evicted);

 private:
  // Renames the new log `writer` wrote into place, then writes its hint
  // and its use table (minutes carried over); the caller holds the append
  // lock. Processes that hold the old files notice on their next miss.
  Status commit_compaction(const std::string& name, CompactionWriter& writer);
  CompactionOptions compaction_options() const {
    return {folder_.options.dir, folder_.options.sync, folder_.file_mode()};
  }

  const UserFolder& folder_;
  UserDbs& dbs_;
  Appender& appender_;
};

}  // namespace kcache::userlog
