// The wait for another process that is compiling the same key
// (docs/design.md §4): take the key's lock in the home tier, polling it
// while another process holds it, and look for the entry that process
// stores meanwhile.
#pragma once

#include <kcache/kernel.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"
#include "upkeep/stats_counters.h"

namespace kcache {

struct LockWait {
  Tier& home;                         // the tier that holds the locks
  std::chrono::milliseconds timeout;  // KCACHE_LOCK_TIMEOUT
  std::string folder;                 // named in warnings
  StatsCounters& stats;               // lock waits, their time, timeouts
  const Logger& log;
};

// Takes the lock of `key` in database `db` (into `lock`), calling `look`
// (a lookup in the home tier alone) after each try. Returns the entry if
// another process stored it meanwhile; nullopt when this process is to
// compile, with the lock held or, after the timeout or when locking is
// impossible, without it (said once).
std::optional<CachedKernel> wait_for_other_processes(
    const LockWait& wait, const std::string& db, const CacheKey& key,
    const std::function<std::optional<CachedKernel>()>& look, std::unique_ptr<FileLock>& lock);

}  // namespace kcache
