// The system tier: read-only .kdb packages in one folder, looked up before
// the user tier. For a target, "<arch>_<units>.kdb" is tried, then
// "<arch>.kdb". Files are opened read-only on first use (this works on a
// read-only file system) and never written. When neither file exists, one
// warning per process and file:
//   kcache: Warning [SystemDb] Missing system database file: <name>.kdb Performance may degrade
// A file that exists but cannot be used (damaged, truncated, empty, a
// folder, unreadable) is treated as absent, with one warning naming it and
// the reason; `kcache verify` lists it and exits 1, since a package is
// never moved or repaired here.
#pragma once

#include <memory>
#include <string>

#include "core/log.h"
#include "env/env.h"
#include "store/tier.h"

namespace kcache {

std::unique_ptr<Tier> make_system_tier(std::string folder, const Env& env, const Logger& log,
                                       TierEvents& events);

}  // namespace kcache
