// Client-keyed entries (kcache/cache.h, ClientClaim): a caller's bytes
// under its own (namespace, key), in the cache's tiers. The key material
// is "kcache.client 1", the namespace and the key; each namespace is the
// database "client.<namespace>". A read compares the whole material, as a
// kernel's does; a claim is the kernels' single flight for a client key:
// in this process a flight, across processes the key's lock in the home
// tier (core/lock_wait.h), both bounded by KCACHE_LOCK_TIMEOUT.
#pragma once

#include <kcache/client.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "core/config.h"
#include "core/single_flight.h"
#include "core/tier_list.h"
#include "env/env.h"
#include "format/compression.h"
#include "store/tier.h"
#include "upkeep/stats_counters.h"
#include "upkeep/stats_file.h"
#include "upkeep/stats_sharing.h"

namespace kcache {

// The database prefix of client namespaces; no kernel's target may name
// one ("client.triton" is Triton's).
inline constexpr std::string_view kClientDbPrefix = "client.";

// A client key as the tiers know it.
struct ClientKey {
  std::string name_space;
  std::string db;        // "client.<namespace>"
  std::string material;  // KeyMaterial::serialize() of the three fields
  CacheKey key;          // its digest
};

// kInvalidArgument unless `name_space` and `key` are within bounds.
Result<ClientKey> client_key(std::string_view name_space, std::string_view key);

class ClientEntries {
 public:
  // What it works on: the facade's (all must outlive it).
  struct Parts {
    const ResolvedConfig& config;
    Env& env;
    const Logger& log;
    TierList& tiers;
    StatsCounters& stats;
    StatsSharing& sharing;
    TierEvents& events;
    Compression compression;
  };
  explicit ClientEntries(Parts parts) : p_(parts) {}
  // For entries stored from now on (KCACHE_COMPRESSION, known once the
  // facade has read its configuration).
  void set_compression(Compression compression) { p_.compression = compression; }

  Result<std::optional<CachedKernel>> get(std::string_view name_space, std::string_view key);
  Status put(std::string_view name_space, std::string_view key, std::span<const std::uint8_t> bytes,
             const EntryMetadata& metadata);
  Result<std::unique_ptr<ClientClaim::State>> claim(std::string_view name_space,
                                                    std::string_view key);
  Status finish(ClientClaim::State& claim, std::span<const std::uint8_t> bytes,
                const EntryMetadata& metadata);
  void abandon(ClientClaim::State& claim);

  // This process's counts, by namespace.
  [[nodiscard]] std::vector<NamespaceCounts> counts() const;

 private:
  using Flights = SingleFlight<CacheKey, std::optional<CachedKernel>>;

  // The entry from the first tier that has it (or from `only`), copied to
  // the copy tier when found below it.
  std::optional<CachedKernel> lookup(const ClientKey& k, const Tier* only = nullptr);
  // Stores an entry of `bytes` (a copy); returns it as a CachedKernel for
  // those waiting, with the write's status.
  Status store(const ClientKey& k, std::span<const std::uint8_t> bytes,
               const EntryMetadata& metadata, std::optional<CachedKernel>* kept);
  // What one call adds to its namespace's counts.
  void count(const std::string& name_space, const NamespaceCounts& added);

  // A namespace's counts in this process, and its shard of the folder's
  // count of it (upkeep/namespace_stats.h) once counts are shared.
  struct Counts {
    NamespaceCounts here;
    std::unique_ptr<StatsFile> file;
    std::atomic<std::uint64_t>* shard = nullptr;
    bool open_failed = false;  // tried once; counts stay this process's
  };
  // Opens the namespace's file, where counts are shared, and adds to it
  // what the process counted before.
  void share(Counts& counts) REQUIRES(counts_mutex_);

  Parts p_;
  Flights flights_;
  mutable Mutex counts_mutex_;
  std::map<std::string, Counts> counts_ GUARDED_BY(counts_mutex_);
};

// What a ClientClaim holds.
struct ClientClaim::State {
  ClientEntries* owner = nullptr;
  ClientKey key;
  std::optional<CachedKernel> found;
  bool held = false;
  std::shared_ptr<SingleFlight<CacheKey, std::optional<CachedKernel>>::Flight> flight;
  std::unique_ptr<FileLock> lock;  // the key's, across processes; null without one
};

}  // namespace kcache
