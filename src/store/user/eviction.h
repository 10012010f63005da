// Which entries of the user tier go when it is over its limits: those not
// used for longer than the age limit, then the least recently used, across
// all databases, until what is kept fits in 90% of each limit (so that a
// pass does not run again at the next put). Pure policy; the tier reads
// the records and compacts (docs/design.md §3.9, "Limits and eviction").
#pragma once

#include <cstdint>
#include <vector>

namespace kcache::userlog {

// The user tier's limits; 0: none.
struct Limits {
  std::uint64_t max_bytes = 0;
  std::uint64_t max_entries = 0;
  std::int64_t max_age_seconds = 0;
  [[nodiscard]] bool any() const { return max_bytes > 0 || max_entries > 0 || max_age_seconds > 0; }
};

// One live entry, as the pass sees it.
struct Candidate {
  std::uint64_t bytes = 0;   // what keeping it costs on disk
  std::uint32_t minute = 0;  // when it was last used
};

struct EvictionPlan {
  std::vector<bool> evict;        // one flag per candidate
  std::vector<bool> for_age;      // one per candidate: evicted for age
  std::uint64_t expired = 0;      // evicted for age
  std::uint64_t over_limits = 0;  // evicted for size or count
  std::uint64_t kept_bytes = 0;   // fixed_bytes and the kept candidates
  std::uint64_t kept_entries = 0;
};

// The plan for `candidates` at Unix time `now_unix`, when the files beside the
// entries (headers, tables) take `fixed_bytes`. The entries used longest
// ago go first; among those used in one minute, the first given (the tier
// gives each database's records in the order they were written).
EvictionPlan plan_eviction(const std::vector<Candidate>& candidates, const Limits& limits,
                           std::int64_t now_unix, std::uint64_t fixed_bytes);

}  // namespace kcache::userlog
