#include "upkeep/stats_sharing.h"

#include "env/trusted_path.h"

namespace kcache {

void StatsSharing::folder_exists() {
  if (allowed()) open();
}

bool StatsSharing::allowed() const {
  return config_.shared_cache || !untrusted_folder_reason(config_.user_dir, env_);
}

StatsFile::SetAside StatsSharing::said_set_aside() const {
  return [this](const std::string& where, const std::string& why) {
    stats_.add(Stat::kCorruptEntries);
    // "<where> is a folder, ...": the path is said once.
    const std::string what =
        why.starts_with(where + " ") ? "it " + why.substr(where.size() + 1) : why;
    log_.warn_once("Integrity:" + where, "Integrity",
                   "Bad user cache file " + where + " (" + what +
                       "); it is set aside in quarantine/ and a new one made (the counts "
                       "start again)");
  };
}

void StatsSharing::open() {
  auto file = StatsFile::open(env_, path(), /*create=*/true, file_mode(), said_set_aside());
  if (file) {
    stats_.share(std::move(*file));
  } else if (file.status().code() != StatusCode::kNotFound) {
    log_.debug("Stats", "cannot share counts: " + file.status().message());
  }
}

void StatsSharing::first_hit(Tier& tier, Tier* home) {
  if (home == nullptr || !allowed()) return;
  if (&tier != home && !home->ready_to_store().is_ok()) return;
  open();
}

}  // namespace kcache
