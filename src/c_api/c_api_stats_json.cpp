// kcache_stats_json: every count of a cache as JSON text, the per-tier
// and per-namespace counts included (c_api.h lists the names).
#include <kcache/admin.h>
#include <kcache/c_api.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include "c_api/c_api_internal.h"

namespace kcache::c_api {
namespace {

// The names `kcache stats --json` gives the counts, which kcache_stats's
// fields share.
struct Count {
  const char* name;
  std::uint64_t CacheStats::*field;
};
constexpr Count kCounts[] = {
    {"requests", &CacheStats::requests},
    {"memory_hits", &CacheStats::memory_hits},
    {"system_hits", &CacheStats::system_hits},
    {"user_hits", &CacheStats::user_hits},
    {"compiles", &CacheStats::compiles},
    {"compile_failures", &CacheStats::compile_failures},
    {"failure_hits", &CacheStats::failure_hits},
    {"compile_micros", &CacheStats::compile_micros},
    {"compile_micros_saved", &CacheStats::compile_micros_saved},
    {"bytes_served", &CacheStats::bytes_served},
    {"bytes_stored", &CacheStats::bytes_stored},
    {"evicted", &CacheStats::evicted},
    {"expired", &CacheStats::expired},
    {"corrupt_entries", &CacheStats::corrupt_entries},
    {"store_failures", &CacheStats::store_failures},
    {"lock_waits", &CacheStats::lock_waits},
    {"lock_wait_micros", &CacheStats::lock_wait_micros},
    {"lock_timeouts", &CacheStats::lock_timeouts},
    {"breaker_trips", &CacheStats::breaker_trips},
    {"rejected", &CacheStats::rejected},
    {"uncacheable", &CacheStats::uncacheable},
};

nlohmann::json counts_json(const CacheStats& stats) {
  nlohmann::json counts = nlohmann::json::object();
  for (const Count& count : kCounts) counts[count.name] = stats.*count.field;
  return counts;
}

nlohmann::json tiers_json(const CacheStats& stats) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierCounts& t : stats.tiers) {
    tiers.push_back({{"tier", t.tier},
                     {"hits", t.hits},
                     {"misses", t.misses},
                     {"failures", t.failures},
                     {"skipped", t.skipped},
                     {"trips", t.trips}});
  }
  return tiers;
}

nlohmann::json namespaces_json(const CacheStats& stats) {
  nlohmann::json namespaces = nlohmann::json::array();
  for (const NamespaceCounts& n : stats.namespaces) {
    namespaces.push_back({{"name", n.name},
                          {"gets", n.gets},
                          {"hits", n.hits},
                          {"puts", n.puts},
                          {"waits", n.waits},
                          {"bytes_served", n.bytes_served},
                          {"bytes_stored", n.bytes_stored}});
  }
  return namespaces;
}

}  // namespace
}  // namespace kcache::c_api

extern "C" int kcache_stats_json(kcache_cache* cache, int all_processes, char** json,
                                 char** error) {
  using kcache::c_api::fail;
  return kcache::c_api::guarded(error, [&] {
    if (cache == nullptr || json == nullptr) {
      return kcache::c_api::invalid("cache and json are required", error);
    }
    *json = nullptr;
    // Tiers and namespaces are counted by each process only: this one's.
    const kcache::CacheStats mine = cache->cache->stats();
    nlohmann::json out = nlohmann::json::object();
    out["all_processes"] = all_processes != 0;
    if (all_processes != 0) {
      auto folder = kcache::CacheAdmin(*cache->cache).folder_stats();
      if (!folder) return fail(folder.status(), error);
      out["counted"] = folder->counted;
      out["counts_problem"] = folder->counts_problem;
      out["since_unix"] = folder->since_unix;
      out["counts"] = kcache::c_api::counts_json(folder->counts);
      out["entries"] = folder->entries;
      out["bytes"] = folder->bytes;
      out["databases"] = folder->databases;
    } else {
      out["counts"] = kcache::c_api::counts_json(mine);
    }
    out["tiers"] = kcache::c_api::tiers_json(mine);
    out["namespaces"] = kcache::c_api::namespaces_json(mine);
    // Text that is not UTF-8 (a path in counts_problem) is replaced
    // rather than thrown on.
    const std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    *json = kcache::c_api::duplicate(text);
    if (*json == nullptr) return fail(kcache::Status::internal("out of memory"), error);
    return kcache::c_api::succeed(error);
  });
}
