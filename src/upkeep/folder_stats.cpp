#include "upkeep/folder_stats.h"

#include "upkeep/stats_counters.h"
#include "upkeep/stats_file.h"

namespace kcache {

Result<FolderStats> read_folder_stats(const Tier& user, Env& env, const std::string& stats_path) {
  FolderStats out;
  auto usage = user.usage();
  if (!usage) return usage.status();
  out.entries = usage->entries;
  out.bytes = usage->bytes;
  out.databases = usage->databases;
  auto file = StatsFile::open(env, stats_path, /*create=*/false);
  if (!file) {
    if (file.status().code() == StatusCode::kNotFound) return out;
    if (file.status().code() != StatusCode::kCorruption) return file.status();
    out.counts_problem = file.status().message();
    return out;
  }
  out.counted = true;
  out.since_unix = (*file)->zeroed_unix();
  out.counts = cache_stats_of((*file)->totals());
  return out;
}

Status zero_folder_stats(Env& env, const std::string& stats_path, mode_t mode,
                         const StatsFile::SetAside& set_aside) {
  auto file = StatsFile::open(env, stats_path, /*create=*/false);
  if (!file && file.status().code() == StatusCode::kNotFound) return Status::ok();
  // Not a stats file: replaced by a new one, whose counts are zero.
  if (!file && file.status().code() == StatusCode::kCorruption) {
    file = StatsFile::open(env, stats_path, /*create=*/true, mode, set_aside);
  }
  if (!file) return file.status();
  (*file)->zero(env.now_unix());
  return Status::ok();
}

}  // namespace kcache
