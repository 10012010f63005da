// The user tier: the read-write cache of this user, one database per
// target under <cache dir>/<version>/:
//   <db>.ukdb                     SQLite index (WAL; a rollback journal on
//                                 a network file system)
//   <db>.entries/<k0k1>/<key hex> one entry file per key
//   quarantine/                   bad files, moved aside with a timestamp:
//                                 <db>.<file name>.<unix time>.bad
// Folders are created 0700 on the first write. A hit reads one entry file
// and never the index; a write renames a synced temporary file into place,
// then records the row. The entry files are the truth: a damaged index
// (and its WAL and SHM) is quarantined and rebuilt from them, and never
// fails a lookup or a write. See docs/design.md §3-6.
#pragma once

#include <memory>
#include <string>

#include "core/log.h"
#include "env/env.h"
#include "format/compression.h"
#include "store/tier.h"

namespace kcache {

struct UserTierOptions {
  std::string dir;   // <cache dir>/<version>
  bool sync = true;  // fsync entry files before they become visible
};

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events);

}  // namespace kcache
