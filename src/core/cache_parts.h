// The parts of an open cache that its administration works on
// (CacheAdmin, core/cache_admin.cpp): the facade's Impl lends them.
#pragma once

#include <kcache/cache.h>

#include "base/log.h"
#include "core/config.h"
#include "core/tier_list.h"
#include "env/env.h"
#include "format/compression.h"
#include "key/key_builder.h"
#include "upkeep/stats_sharing.h"

namespace kcache {

struct CacheParts {
  const ResolvedConfig& config;
  Env& env;
  const Logger& log;
  TierList& tiers;
  KeyMemo& memo;
  StatsSharing& sharing;
  Compression compression;
};

// The parts of `impl` (core/cache.cpp).
CacheParts parts_of(Cache::Impl& impl);

}  // namespace kcache
