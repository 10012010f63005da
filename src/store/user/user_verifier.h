// `kcache verify` of the user tier: each log scanned whole and compared
// with its hint, what is wrong reported, and, when asked, repaired (a torn
// tail cut, the hint rebuilt, a log with damaged entries compacted, a bad
// log moved aside, temporary files of killed writers removed).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/tier.h"
#include "store/user/db_compactor.h"
#include "store/user/folder_trust.h"
#include "store/user/record_index.h"
#include "store/user/user_db.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class UserVerifier {
 public:
  UserVerifier(const UserFolder& folder, FolderTrust& trust, UserDbs& dbs, DbCompactor& compactor)
      : folder_(folder), trust_(trust), dbs_(dbs), compactor_(compactor) {}
  UserVerifier(const UserVerifier&) = delete;
  UserVerifier& operator=(const UserVerifier&) = delete;

  // Tier::verify.
  Status verify(bool repair, VerifyReport& report);

 private:
  // `still`: no process can append to the log (a folder no one may write
  // in), so the append lock is not taken (it could not be opened there).
  void verify_db(const std::string& name, bool repair, bool still, VerifyReport& report);

  // The records the hint file of `name` holds, when it describes the log
  // of `generation`; adds what is wrong with the file itself to `found`.
  RecordIndex read_hint_file(const std::string& name, const Generation& generation,
                             std::vector<VerifyReport::Problem>& found);

  // Adds where the hint disagrees with a scan of the log (but for keys
  // whose records were found damaged, reported already); true if it does.
  bool compare_hint(const std::string& name, const LogScan& scan, const RecordIndex& hinted,
                    const std::map<std::uint64_t, CacheKey>& damaged_keys,
                    std::vector<VerifyReport::Problem>& found);

  // Writes a new log holding the good newest records of `scan` (damaged
  // bytes are copied to quarantine/ first) and its hint, and renames both
  // into place; the caller holds the append lock. Processes that hold the
  // old files notice on their next miss.
  Status compact(const std::string& name, const File& log, const LogScan& scan,
                 const std::map<std::uint64_t, CacheKey>& damaged_keys);

  // Temporary files (`<db>.ukdb.tmp.*`, `<db>.ukdx.tmp.*`, but for those
  // of compactions, verify_db's) older than an hour: a writer that was
  // killed before its rename left them.
  std::vector<std::string> stale_temp_files(const std::string& name) const;

  const UserFolder& folder_;
  FolderTrust& trust_;
  UserDbs& dbs_;
  DbCompactor& compactor_;
};

}  // namespace kcache::userlog
