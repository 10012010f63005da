// The tiers a cache reads, in lookup order, as data: lookup, promotion,
// the store after a compile, stats and the admin methods loop over this
// list instead of naming each tier (docs/design.md §3.1).
// Each tier is wrapped in a GuardedTier (store/guarded_tier.h): counters
// of its answers, and breakers that set it aside while it keeps failing.
//
// Two roles are held by at most one tier each:
//   the copy tier  keeps what is found below it, for this process (memory);
//   the home tier  receives compiles, holds the cross-process locks and
//                  the remembered failures, and is what list, show, prune,
//                  gc, import, export and the shared stats are about (user).
// A tier that is read-only is never written, and is passed over for a key
// the driver rejected (its entry cannot be removed). A later tier (a
// remote one) is one more entry: read after the home tier, what it finds
// kept in the copy tier like any other.
#pragma once

#include <kcache/kernel.h>
#include <kcache/stats.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "store/guarded_tier.h"
#include "upkeep/stats_counters.h"

namespace kcache {

struct TierSlot {
  TierKind kind;
  Stat hits;  // what a hit in it counts
  std::unique_ptr<GuardedTier> tier;
  bool read_only = false;
  // Its entries are views of files other processes write (the user
  // tier's mapped logs): the copy tier keeps a copy (format/entry.h
  // owned_copy), which no later change of the file can reach.
  bool copy_before_keeping = false;
};

struct TierTraits {
  bool read_only = false;
  bool copy_before_keeping = false;
};

enum class TierRole { kNone, kCopy, kHome };

class TierList {
 public:
  // Appends `tier` after those added before (the lookup order). `on_trip`
  // is called each time one of its breakers opens.
  void add(TierKind kind, Stat hits, std::unique_ptr<Tier> tier, TierRole role, TierTraits traits,
           const std::function<void()>& on_trip);

  [[nodiscard]] std::span<const TierSlot> slots() const { return slots_; }
  // nullptr when there is none (the memory tier is off; no user folder).
  [[nodiscard]] Tier* copy_tier() const { return copy_; }
  [[nodiscard]] Tier* home() const { return home_; }

  // Every tier's counters, in lookup order (CacheStats::tiers).
  [[nodiscard]] std::vector<TierCounts> counts() const;

  // Calls `action` with each tier that is not the copy tier, the last in
  // lookup order first (the home tier before the read-only packages):
  // verify's order.
  void for_each_on_disk(const std::function<void(Tier&)>& action) const;

  // Drops the tiers, the home tier first: it waits for its background
  // pass, which may report through what the others hold.
  void clear();

 private:
  std::vector<TierSlot> slots_;
  Tier* copy_ = nullptr;
  Tier* home_ = nullptr;
};

}  // namespace kcache
