// The user tier's limits (docs/design.md §3.9, "Limits and eviction"): the
// eviction pass that brings the folder within them, run by `kcache prune`
// or in the background after a put that took the folder past one, and the
// sweep of what killed passes left (temporary files of compactions, use
// tables whose log is gone).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "store/user/db_compactor.h"
#include "store/user/eviction.h"
#include "store/user/use_tracker.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"

namespace kcache::userlog {

class Maintenance {
 public:
  Maintenance(const UserFolder& folder, UserDbs& dbs, UseTracker& uses, DbCompactor& compactor)
      : folder_(folder), dbs_(dbs), uses_(uses), compactor_(compactor) {}
  // Waits for an eviction pass this process runs in the background.
  ~Maintenance();
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  // After a put: when the folder is past a limit (or an age pass is due),
  // an eviction pass starts in the background, unless one runs already.
  void after_put() EXCLUDES(mutex_);
  // One pass: brings the folder within `limits`, under the maintenance
  // lock, waited for up to `wait` (report.ran is false when another
  // process holds it still; a background pass does not wait).
  Status run_pass(const Limits& limits, std::chrono::milliseconds wait, PruneReport& report);

 private:
  // Whether the folder is past the size or count limit, by its files'
  // sizes (one listing; hint records count dead entries too).
  bool past_limits(const Limits& limits) const;
  // Removes the temporary files of compactions of `name` killed before
  // their rename (under its append lock; nothing when none is there).
  void sweep_abandoned_compactions(const std::string& name);
  // Removes the use tables whose log is gone (moved to quarantine, say).
  void remove_orphan_use_tables();

  const UserFolder& folder_;
  UserDbs& dbs_;
  UseTracker& uses_;
  DbCompactor& compactor_;

  // The background eviction pass (after_put): at most one per process.
  Mutex mutex_;  // guards the members below
  CondVar done_;
  bool maintaining_ GUARDED_BY(mutex_) = false;
  pid_t maintainer_ GUARDED_BY(mutex_) = 0;  // the process that started it (fork)
  std::int64_t last_age_pass_ GUARDED_BY(mutex_) = 0;
};

}  // namespace kcache::userlog
