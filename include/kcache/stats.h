// kcache: what a cache counted: this process's counts (Cache::stats) and
// every process's, for one cache folder (`kcache stats`).
#pragma once

#include <kcache/export.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kcache {

// What one tier answered in this process (CacheStats::tiers).
struct KCACHE_EXPORT TierCounts {
  std::string tier;            // "memory", "system", "user"
  std::uint64_t hits = 0;      // lookups it answered with an entry
  std::uint64_t misses = 0;    // lookups it answered without one
  std::uint64_t failures = 0;  // calls that reached it and failed (I/O, ...)
  std::uint64_t skipped = 0;   // calls not made: it was set aside after failures
  std::uint64_t trips = 0;     // times it was set aside
};

// What one namespace of client-keyed entries counted in this process
// (CacheStats::namespaces).
struct KCACHE_EXPORT NamespaceCounts {
  std::string name{};
  std::uint64_t gets = 0;   // get() and claim() calls
  std::uint64_t hits = 0;   // of those, answered with an entry
  std::uint64_t puts = 0;   // entries stored (put() and finished claims)
  std::uint64_t waits = 0;  // claims that waited for another claimant
  std::uint64_t bytes_served = 0;
  std::uint64_t bytes_stored = 0;
};

// Counters since the cache was opened. Each request is answered as one of
// memory, system or user hits, compiles, compile failures or failure hits:
// requests is their sum.
struct KCACHE_EXPORT CacheStats {
  std::uint64_t requests = 0;
  // From this process's memory, requests served by another thread's
  // compile of the same kernel included.
  std::uint64_t memory_hits = 0;
  std::uint64_t system_hits = 0;
  std::uint64_t user_hits = 0;
  std::uint64_t compiles = 0;
  std::uint64_t compile_failures = 0;
  std::uint64_t corrupt_entries = 0;  // bad entries met (and quarantined)
  std::uint64_t store_failures = 0;   // compiled binaries that could not be stored
  std::uint64_t lock_timeouts = 0;    // waits for another process that ran out
  // Compile errors answered without compiling: from the negative cache,
  // or another thread's failed compile of the same kernel.
  std::uint64_t failure_hits = 0;
  // Requests compiled without the cache because kcache cannot know all a
  // compile reads (an option naming files it does not model, ...).
  std::uint64_t uncacheable = 0;
  // Binaries the driver refused (Cache::reject), removed and compiled again.
  std::uint64_t rejected = 0;
  std::uint64_t lock_waits = 0;  // requests that waited for another process's compile
  std::uint64_t lock_wait_micros = 0;
  std::uint64_t evicted = 0;               // entries evicted for size or count (by this process)
  std::uint64_t expired = 0;               // entries evicted for age (KCACHE_MAX_AGE)
  std::uint64_t breaker_trips = 0;         // times a failing tier was set aside for a while
  std::uint64_t compile_micros = 0;        // time spent compiling
  std::uint64_t compile_micros_saved = 0;  // what the hits' compiles had cost
  std::uint64_t bytes_served = 0;          // binaries handed out by a tier
  std::uint64_t bytes_stored = 0;          // entries written to the user tier
  // Each tier's own counts, in lookup order. A tier's hits count every
  // lookup it answered, waits for another process's compile included;
  // the *_hits above count requests.
  std::vector<TierCounts> tiers{};
  // Client-keyed entries, by namespace (sorted by name): counted apart
  // from the kernel requests above.
  std::vector<NamespaceCounts> namespaces{};
};

// What every process that used this cache folder counted since the counts
// were last zeroed, and what the user tier holds now (`kcache stats`).
struct KCACHE_EXPORT FolderStats {
  // False when no process has stored anything here yet (no counts kept),
  // or when the counts cannot be read (counts_problem says why).
  bool counted = false;
  // Why the counts are not shown: something that is not a stats file
  // stands in its place (a folder, a FIFO, a link, a damaged file). Empty
  // when they are, or when there are none yet.
  std::string counts_problem{};
  std::int64_t since_unix = 0;  // when the counts were zeroed, or began
  CacheStats counts{};
  std::uint64_t entries = 0;  // in the user tier
  std::uint64_t bytes = 0;    // of its files on disk
  std::uint64_t databases = 0;
};

}  // namespace kcache
