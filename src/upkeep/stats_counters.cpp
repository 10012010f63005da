#include "upkeep/stats_counters.h"

#include <unistd.h>

#include <mutex>

#include <kcache/stats.h>

#include "upkeep/stats_file.h"

namespace kcache {

std::string_view stat_name(Stat stat) {
  static constexpr std::string_view kNames[] = {
      "requests",     "memory_hits",      "system_hits",     "user_hits",
      "compiles",     "compile_failures", "compile_micros",  "compile_micros_saved",
      "bytes_served", "bytes_stored",     "corrupt_entries", "store_failures",
      "lock_waits",   "lock_wait_micros", "lock_timeouts",   "failure_hits",
      "uncacheable",  "rejected",         "evicted",         "expired",
      "breaker_trips"};
  static_assert(std::size(kNames) == kStatCount);
  return kNames[static_cast<std::size_t>(stat)];
}

CacheStats cache_stats_of(const StatValues& v) {
  const auto at = [&](Stat stat) { return v[static_cast<std::size_t>(stat)]; };
  CacheStats s;
  s.requests = at(Stat::kRequests);
  s.memory_hits = at(Stat::kMemoryHits);
  s.system_hits = at(Stat::kSystemHits);
  s.user_hits = at(Stat::kUserHits);
  s.compiles = at(Stat::kCompiles);
  s.compile_failures = at(Stat::kCompileFailures);
  s.corrupt_entries = at(Stat::kCorruptEntries);
  s.store_failures = at(Stat::kStoreFailures);
  s.lock_timeouts = at(Stat::kLockTimeouts);
  s.failure_hits = at(Stat::kFailureHits);
  s.uncacheable = at(Stat::kUncacheable);
  s.rejected = at(Stat::kRejected);
  s.lock_waits = at(Stat::kLockWaits);
  s.lock_wait_micros = at(Stat::kLockWaitMicros);
  s.evicted = at(Stat::kEvicted);
  s.expired = at(Stat::kExpired);
  s.breaker_trips = at(Stat::kBreakerTrips);
  s.compile_micros = at(Stat::kCompileMicros);
  s.compile_micros_saved = at(Stat::kCompileMicrosSaved);
  s.bytes_served = at(Stat::kBytesServed);
  s.bytes_stored = at(Stat::kBytesStored);
  return s;
}

StatValues StatsCounters::local_values() const {
  StatValues values{};
  for (std::size_t i = 0; i < kStatCount; ++i)
    values[i] = local_[i].load(std::memory_order_relaxed);
  return values;
}

StatsCounters::StatsCounters() = default;
StatsCounters::~StatsCounters() = default;

void StatsCounters::share(std::unique_ptr<StatsFile> file) {
  static std::mutex sharing;  // share() is rare: once per cache
  std::lock_guard lock(sharing);
  if (file_ || !file) return;
  file_ = std::move(file);
  std::atomic<std::uint64_t>* shard = file_->shard_for(static_cast<std::uint64_t>(::getpid()));
  // What this process counted before the file was there (its first
  // compile made the folder) counts too; a count added by another thread
  // in the instant between these two lines reaches only this process's.
  for (std::size_t i = 0; i < kStatCount; ++i) {
    shard[i].fetch_add(local_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  shared_.store(shard, std::memory_order_release);
}

}  // namespace kcache
