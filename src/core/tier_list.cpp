#include "core/tier_list.h"

#include <algorithm>

namespace kcache {

void TierList::add(TierKind kind, Stat hits, std::unique_ptr<Tier> tier, TierRole role,
                   TierTraits traits, const std::function<void()>& on_trip) {
  auto guarded = std::make_unique<GuardedTier>(std::move(tier));
  if (on_trip) guarded->on_trip(on_trip);
  if (role == TierRole::kCopy) copy_ = guarded.get();
  if (role == TierRole::kHome) home_ = guarded.get();
  slots_.push_back({kind, hits, std::move(guarded), traits.read_only, traits.copy_before_keeping});
}

std::vector<TierCounts> TierList::counts() const {
  std::vector<TierCounts> out;
  out.reserve(slots_.size());
  for (const TierSlot& slot : slots_) {
    const TierCounters& c = slot.tier->counters();
    out.push_back(
        {std::string(slot.tier->name()), c.hits.load(std::memory_order_relaxed),
         c.misses.load(std::memory_order_relaxed), c.failures.load(std::memory_order_relaxed),
         c.skipped.load(std::memory_order_relaxed), c.trips.load(std::memory_order_relaxed)});
  }
  return out;
}

void TierList::for_each_on_disk(const std::function<void(Tier&)>& action) const {
  for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) {
    if (it->tier.get() != copy_) action(*it->tier);
  }
}

void TierList::clear() {
  auto home = std::find_if(slots_.begin(), slots_.end(),
                           [&](const TierSlot& slot) { return slot.tier.get() == home_; });
  if (home != slots_.end()) home->tier.reset();
  copy_ = nullptr;
  home_ = nullptr;
  slots_.clear();
}

}  // namespace kcache
