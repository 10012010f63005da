// What every process counted for a cache folder (its stats file,
// core/stats_file.h) and what its user tier holds: `kcache stats`.
#pragma once

#include <kcache/cache.h>

#include <string>

#include "env/env.h"
#include "store/tier.h"

namespace kcache {

Result<FolderStats> read_folder_stats(const Tier& user, Env& env, const std::string& stats_path);
// Sets the folder's counts to zero (nothing to do when it has none yet).
Status zero_folder_stats(Env& env, const std::string& stats_path);

}  // namespace kcache
