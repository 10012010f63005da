// The walk down the tiers that both kinds of lookup share: a kernel's
// (core/cache.cpp) and a client entry's (core/client_entries.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/log.h"
#include "core/tier_list.h"
#include "format/entry.h"
#include "store/tier.h"
#include "upkeep/stats_sharing.h"

namespace kcache {

struct TierWalk {
  TierList& tiers;
  const Logger& log;
  TierEvents& events;
  StatsSharing& sharing;
};

// The first entry of `key` in the tiers, in lookup order (or in `only`
// alone), that the caller takes: `skip(slot)` passes over a tier without
// asking it, `matches(material)` must hold (an entry whose key material
// differs is reported corrupt), and `serves(slot, entry)` may pass over
// one the request cannot use. A tier that fails is said once and skipped.
// A hit from the copy tier is a use of the entry below it (it stays warm
// there); one from below is kept in the copy tier when `keep_in_memory`.
template <class Skip, class Matches, class Serves>
std::optional<std::pair<Entry, const TierSlot*>> find_in_tiers(
    const TierWalk& walk, const DbNames& names, const CacheKey& key, bool keep_in_memory,
    const Tier* only, Skip&& skip, Matches&& matches, Serves&& serves) {
  Tier* const copies = walk.tiers.copy_tier();
  for (const TierSlot& slot : walk.tiers.slots()) {
    Tier& tier = *slot.tier;
    if (only != nullptr && slot.tier.get() != only) continue;
    if (skip(slot)) continue;
    auto got = tier.get(names, key);
    if (!got) {
      walk.log.warn_once("TierRead:" + got.status().message(), "Cache",
                         "Cannot read the " + std::string(tier.name()) +
                             " cache: " + got.status().message() + " (skipping it)");
      continue;
    }
    if (!got->has_value()) continue;
    Entry& entry = **got;
    if (!matches(entry.material.view())) {
      walk.events.on_corrupt(tier.name(), key.hex(),
                             Status::corruption("its key material differs from the request's"));
      continue;
    }
    if (!serves(slot, entry)) continue;
    walk.sharing.on_hit(tier, walk.tiers.home());
    if (&tier == copies) {
      for (const TierSlot& other : walk.tiers.slots()) {
        if (other.tier.get() != copies) other.tier->note_use(names, key);
      }
    } else if (copies != nullptr && keep_in_memory) {
      copies->put(names.exact, slot.copy_before_keeping ? owned_copy(entry) : entry, {});
    }
    return std::pair<Entry, const TierSlot*>(std::move(entry), &slot);
  }
  return std::nullopt;
}

}  // namespace kcache
