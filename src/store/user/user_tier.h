// The user tier: the read-write cache of this user, one database per
// target under <cache dir>/<version>/:
//   <db>.ukdb     the log: every entry appended, self-checking (the truth)
//   <db>.ukdx     its hint: where each key's newest record lies (derived)
//   <db>.locks    byte locks: one per key for compiles, byte 0 for appends
//   quarantine/   bad bytes, copied aside with a timestamp:
//                 <db>.<key or file name>.<unix time>.bad
// Folders are created 0700 on the first write. A process reads the hint
// once and keeps the log open: a hit is one pread and the entry's checks.
// A write appends the entry under the append lock, syncs it, then appends
// its hint record; a reader never locks. A damaged or missing hint is
// rebuilt from the log; damaged log bytes are skipped, and cut off when
// they end the log (a write interrupted by a kill). See docs/design.md §3.7-3.9 and §4-6
// and docs/formats.md §3.
#pragma once

#include <memory>
#include <string>

#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"
#include "store/user/eviction.h"

namespace kcache {

struct UserTierOptions {
  std::string dir;   // <cache dir>/<version>
  bool sync = true;  // fdatasync each appended entry before its hint record
  // Declared shared by its users (KCACHE_SHARED_CACHE): the folder is used
  // even when others can write it, and what is made in it is made
  // readable and writable for all, as the umask allows.
  bool shared = false;
  // KCACHE_MAX_SIZE, KCACHE_MAX_ENTRIES, KCACHE_MAX_AGE: passing one after a
  // put starts an eviction pass in the background.
  userlog::Limits limits{};
};

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events);

}  // namespace kcache
