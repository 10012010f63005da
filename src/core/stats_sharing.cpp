#include "core/stats_sharing.h"

#include "core/stats_file.h"
#include "env/trusted_path.h"

namespace kcache {

void StatsSharing::folder_exists() {
  if (allowed()) open();
}

bool StatsSharing::allowed() const {
  return config_.shared_cache || !untrusted_folder_reason(config_.user_dir, env_);
}

void StatsSharing::open() {
  auto file = StatsFile::open(env_, path(), /*create=*/true, config_.shared_cache ? 0666 : 0600);
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
