// What a cache counts: this process's counts, and, through a file every
// process maps (upkeep/stats_file.h), those of every process that used the
// cache folder since the counts were last zeroed (docs/design.md §8).
// Counting is a relaxed atomic add in memory: no lock, no system call.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

namespace kcache {

// The counters, in the order the stats file holds them (docs/formats.md
// §6): new ones are added at the end, never renumbered. Each request
// counted is answered as one of: a hit (memory, system, user; a thread
// served by another's compile of its key is a memory hit), a compile
// (compiles or compile_failures), or a compile error answered without
// compiling (failure_hits); requests are their sum. Uncacheable requests
// are among the compiles.
enum class Stat : std::uint32_t {
  kRequests,
  kMemoryHits,
  kSystemHits,
  kUserHits,
  kCompiles,
  kCompileFailures,
  kCompileMicros,       // time spent compiling
  kCompileMicrosSaved,  // on hits, the compile time the entry had cost
  kBytesServed,         // binaries handed out from a tier
  kBytesStored,         // entries written to the user tier
  kCorruptEntries,
  kStoreFailures,
  kLockWaits,  // requests that waited for another process's compile
  kLockWaitMicros,
  kLockTimeouts,
  kFailureHits,
  kUncacheable,
  kRejected,
  kEvicted,  // least recently used, for size or count
  kExpired,  // unused for longer than KCACHE_MAX_AGE
  kBreakerTrips,
  kCount
};
inline constexpr std::size_t kStatCount = static_cast<std::size_t>(Stat::kCount);

// "requests", "memory_hits", ...: the name in `kcache stats --json`.
std::string_view stat_name(Stat stat);

class StatsFile;
struct CacheStats;

using StatValues = std::array<std::uint64_t, kStatCount>;
// The public struct (kcache/stats.h) of counts held by index.
CacheStats cache_stats_of(const StatValues& values);

class StatsCounters {
 public:
  StatsCounters();
  ~StatsCounters();
  StatsCounters(const StatsCounters&) = delete;
  StatsCounters& operator=(const StatsCounters&) = delete;

  void add(Stat stat, std::uint64_t n = 1) {
    const auto i = static_cast<std::size_t>(stat);
    local_[i].fetch_add(n, std::memory_order_relaxed);
    if (std::atomic<std::uint64_t>* shared = shared_.load(std::memory_order_acquire)) {
      shared[i].fetch_add(n, std::memory_order_relaxed);
    }
  }
  [[nodiscard]] std::uint64_t local(Stat stat) const {
    return local_[static_cast<std::size_t>(stat)].load(std::memory_order_relaxed);
  }
  // This process's counts.
  [[nodiscard]] StatValues local_values() const;

  // Counts from now on go to `file` too, and those counted so far are
  // added to it (once; later calls are ignored).
  void share(std::unique_ptr<StatsFile> file);
  [[nodiscard]] bool shared() const { return shared_.load(std::memory_order_acquire) != nullptr; }

 private:
  std::array<std::atomic<std::uint64_t>, kStatCount> local_{};
  std::unique_ptr<StatsFile> file_;  // set once, before shared_
  std::atomic<std::atomic<std::uint64_t>*> shared_{nullptr};
};

}  // namespace kcache
