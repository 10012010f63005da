// The system tier: read-only .kdb packages in one folder, looked up before
// the user tier. For a target, "<arch>_<units>.kdb" is tried, then
// "<arch>.kdb". Files are opened read-only on first use (this works on a
// read-only file system) and never written. When neither file exists, one
// warning per process and file:
//   kcache: Warning [SystemDb] Missing system database file: <name>.kdb Performance may degrade
// A file that exists but cannot be used (damaged, truncated, empty, a
// folder, unreadable) is treated as absent (until another file is put in
// its place), with one warning naming it and
// the reason; `kcache verify` lists it and exits 1, since a package is
// never moved or repaired here. A package another user could have written
// is refused (trusted_path.h); with trusted keys (KCACHE_TRUSTED_KEYS) a
// package is used only when one of them signed it, wherever it lies, and
// each entry is checked against the digest it was signed with
// (trusted_keys.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"

namespace kcache {

// The tier's name (Tier::name), as its reports to TierEvents give it.
inline constexpr std::string_view kSystemTierName = "system";

// `recheck`: how often the files of a database's packages are looked at
// again (a stat each): one installed where none was, a drop-in added, one
// renamed over a package that could not be used, are then taken up by a
// running program. A package in use that changes is seen at once (its
// open file's fstat, or its checks).
std::unique_ptr<Tier> make_system_tier(std::string folder, std::vector<std::string> trusted_keys,
                                       const Env& env, const Logger& log, TierEvents& events,
                                       std::chrono::milliseconds recheck = std::chrono::seconds(1));

}  // namespace kcache
