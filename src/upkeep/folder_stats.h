// What every process counted for a cache folder (its stats file,
// upkeep/stats_file.h) and what its user tier holds: `kcache stats`.
#pragma once

#include <kcache/stats.h>

#include <string>

#include "env/env.h"
#include "store/tier.h"
#include "upkeep/stats_file.h"

namespace kcache {

// Reads, changes nothing: whatever stands in the stats file's place that
// is not one (and was not set aside as the cache opened) leaves the counts
// out, saying why (FolderStats::counts_problem).
Result<FolderStats> read_folder_stats(const Tier& user, Env& env, const std::string& stats_path);
// Sets the folder's counts to zero (nothing to do when it has none yet).
// Whatever stands in the stats file's place that is not one is moved into
// quarantine/ (`set_aside` told) and a new file made, of mode `mode`.
Status zero_folder_stats(Env& env, const std::string& stats_path, mode_t mode,
                         const StatsFile::SetAside& set_aside);

}  // namespace kcache
