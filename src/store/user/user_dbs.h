// The databases of the user tier this process holds open (user_db.h), by
// name: opening one (its log, and its hint or a scan of the log), noticing
// when its files were replaced by another process, forgetting it, and
// writing its hint anew. A bad log met on the way is moved aside here.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "store/user/folder_trust.h"
#include "store/user/user_db.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class UserDbs {
 public:
  UserDbs(const UserFolder& folder, FolderTrust& trust) : folder_(folder), trust_(trust) {}
  UserDbs(const UserDbs&) = delete;
  UserDbs& operator=(const UserDbs&) = delete;

  // The databases of the folder (unavailable when the folder is refused).
  Result<std::vector<std::string>> names() const;

  // The open database `name`: nullptr when it has no log (yet).
  Result<std::shared_ptr<Db>> db_for(const std::string& name) EXCLUDES(mutex_);

  // The database `name` if this process has it open (never opens it).
  std::shared_ptr<Db> find_open(const std::string& name) EXCLUDES(mutex_);

  // Holds `db` as the open database `name`, in place of any other.
  void keep(const std::string& name, std::shared_ptr<Db> db) EXCLUDES(mutex_);

  void forget(const std::string& name) EXCLUDES(mutex_);

  // The open database `name`, opened anew when its files were replaced,
  // caught up with its hint and its log; nullptr when it has no usable log.
  std::shared_ptr<Db> current_db(const std::string& name);

  // Opens the log of `name` (read-write when this process may write it)
  // and reads its hint; a hint that is missing or describes another log is
  // replaced by a scan of the log, and rebuilt when no one is appending.
  Result<std::shared_ptr<Db>> open_db(const std::string& name);

  // Whether the files of `name` are no longer the ones `db` holds: cleared,
  // compacted, or a hint rebuilt by someone else.
  bool replaced(const std::string& name, const Db& db) const;

  // Writes a new hint for `db` (its newest records) and renames it into
  // place; the caller holds the append lock.
  Status write_hint(const std::string& name, Db& db);

  // Writes the hint of `db` anew from what a scan of `scanned` bytes of
  // its log found, when this process may write and no one has appended
  // since; else leaves the hint as it is.
  void rewrite_hint_after_scan(const std::string& name, Db& db, std::uint64_t scanned);

  // What a lookup makes of a database that cannot be opened: something
  // other than a file where the log belongs, or a log with a bad header, is
  // moved aside like any bad file, but only under the append lock and after
  // looking again (a writer may have just replaced it): when another
  // process holds the lock, the write after the compile does it. Any other
  // failure (no permission, an I/O error) is a miss: the write after the
  // compile meets the same cause and reports it, so that one cause gives
  // one warning.
  Result<std::optional<Entry>> open_failure(const std::string& name, const Status& problem);

  // Moves the log of `name` aside, with one report, if it is still not a
  // usable log; the caller holds the append lock.
  Status quarantine_bad_log(const std::string& name);

  // Reports a bad file and moves it aside.
  void quarantine_file(const std::string& db, const std::string& path, const Status& problem);

 private:
  const UserFolder& folder_;
  FolderTrust& trust_;
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<Db>, std::less<>> dbs_ GUARDED_BY(mutex_);
};

}  // namespace kcache::userlog
