#include "store/user/eviction.h"

#include <algorithm>
#include <numeric>

namespace kcache::userlog {

EvictionPlan plan_eviction(const std::vector<Candidate>& candidates, const Limits& limits,
                           std::int64_t now_unix, std::uint64_t fixed_bytes) {
  EvictionPlan plan;
  plan.evict.assign(candidates.size(), false);
  plan.for_age.assign(candidates.size(), false);
  plan.kept_bytes = fixed_bytes;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // Uses are known by the minute: an entry counts as last used at the
    // start of its minute (at most 59 s early), so that an age limit below
    // a minute (a test's "1s") still means something.
    const std::int64_t idle = now_unix - std::int64_t{candidates[i].minute} * 60;
    if (limits.max_age_seconds > 0 && idle > limits.max_age_seconds) {
      plan.evict[i] = true;
      plan.for_age[i] = true;
      ++plan.expired;
      continue;
    }
    plan.kept_bytes += candidates[i].bytes;
    ++plan.kept_entries;
  }
  const bool over_bytes = limits.max_bytes > 0 && plan.kept_bytes > limits.max_bytes;
  const bool over_entries = limits.max_entries > 0 && plan.kept_entries > limits.max_entries;
  if (!over_bytes && !over_entries) return plan;

  // 90%, rounded up: a limit of 1 entry keeps 1.
  const std::uint64_t byte_goal = limits.max_bytes - limits.max_bytes / 10;
  const std::uint64_t entry_goal = limits.max_entries - limits.max_entries / 10;
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return candidates[a].minute < candidates[b].minute;
  });
  for (std::size_t i : order) {
    const bool bytes_left = over_bytes && plan.kept_bytes > byte_goal;
    const bool entries_left = over_entries && plan.kept_entries > entry_goal;
    if (!bytes_left && !entries_left) break;
    if (plan.evict[i]) continue;
    plan.evict[i] = true;
    ++plan.over_limits;
    plan.kept_bytes -= candidates[i].bytes;
    --plan.kept_entries;
  }
  return plan;
}

}  // namespace kcache::userlog
