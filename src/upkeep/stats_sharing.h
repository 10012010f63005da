// When a process's counts go into its user cache folder's stats file
// (upkeep/stats_file.h, design.md §8), so that `kcache stats` adds up every
// process: from the start when the folder exists, else from the first
// store or hit that makes it. Never in a folder another user could write
// (the user tier refuses it too), unless the cache is shared on purpose.
#pragma once

#include <kcache/options.h>

#include <atomic>
#include <string>

#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"
#include "upkeep/stats_counters.h"
#include "upkeep/stats_file.h"

namespace kcache {

class StatsSharing {
 public:
  // `config`, `env`, `log` and `stats` must outlive it.
  StatsSharing(const ResolvedConfig& config, Env& env, const Logger& log, StatsCounters& stats)
      : config_(config), env_(env), log_(log), stats_(stats) {}

  // The folder's stats file.
  [[nodiscard]] std::string path() const { return config_.user_dir + "/kcache.stats"; }
  // Its mode when made: every user's to count into in a cache shared on
  // purpose, else this user's alone.
  [[nodiscard]] mode_t file_mode() const { return config_.shared_cache ? 0666 : 0600; }

  // The folder exists (found at open, or an entry was stored in it):
  // counts are shared from now on, where they may be.
  void folder_exists();

  // Says (once a path) what StatsFile::open moved aside, and counts it as
  // a damaged file met.
  [[nodiscard]] StatsFile::SetAside said_set_aside() const;

  // A hit from `tier`; `home` is the home tier (null without one). On the
  // hit path: after the first, a read of two flags and nothing else; a
  // process that never shares writes nothing here.
  void on_hit(Tier& tier, Tier* home) {
    if (!stats_.shared() && !tried_by_hit_.load(std::memory_order_relaxed) &&
        !tried_by_hit_.exchange(true)) {
      first_hit(tier, home);
    }
  }

 private:
  // Whether counts may go to the folder's file (see above).
  [[nodiscard]] bool allowed() const;
  // Opens the file (made when absent) and shares counts into it.
  void open();
  // A hit from the home tier means the folder exists; a hit from a package
  // makes it, as a store would, so that a process served by packages alone
  // is counted. Where another user could write, a hit makes no folder and
  // says nothing (a store says why the folder is refused).
  void first_hit(Tier& tier, Tier* home);

  const ResolvedConfig& config_;
  Env& env_;
  const Logger& log_;
  StatsCounters& stats_;
  std::atomic<bool> tried_by_hit_{false};  // a store tries each time
};

}  // namespace kcache
