#include "core/folder_stats.h"

#include "core/stats_counters.h"
#include "core/stats_file.h"

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
    return file.status();
  }
  out.counted = true;
  out.since_unix = (*file)->zeroed_unix();
  out.counts = cache_stats_of((*file)->totals());
  return out;
}

Status zero_folder_stats(Env& env, const std::string& stats_path) {
  auto file = StatsFile::open(env, stats_path, /*create=*/false);
  if (!file) return file.status().code() == StatusCode::kNotFound ? Status::ok() : file.status();
  (*file)->zero(env.now_unix());
  return Status::ok();
}

}  // namespace kcache
