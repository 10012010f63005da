// kcache_stats_json: every count, the tiers' and the namespaces' included,
// of this cache or of every process on its folder.
#include <kcache/c_api.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "c_api/c_api_fixture.h"
#include "fakes/temp_folder.h"

namespace {

using kcache::testing::CachePtr;
using kcache::testing::copying_compiler;
using kcache::testing::fetch;
using kcache::testing::open_in;
using kcache::testing::take_error;
using kcache::testing::TempFolder;

nlohmann::json stats_json(kcache_cache* cache, int all_processes) {
  char* json = nullptr;
  char* error = nullptr;
  EXPECT_EQ(kcache_stats_json(cache, all_processes, &json, &error), KCACHE_OK) << take_error(error);
  EXPECT_EQ(error, nullptr);
  std::string text = json != nullptr ? json : "null";
  kcache_string_free(json);
  return nlohmann::json::parse(text);
}

TEST(CApiStatsJsonTest, EveryCountTheTiersAndTheNamespaces) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  auto compiler = copying_compiler();
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "counted";
  fetch(cache.get(), compiler.get(), request);
  fetch(cache.get(), compiler.get(), request);
  char* error = nullptr;
  ASSERT_EQ(kcache_put(cache.get(), "triton", "k", 1, "abc", 3, nullptr, nullptr, 0, &error),
            KCACHE_OK)
      << take_error(error);
  kcache_entry* entry = nullptr;
  ASSERT_EQ(kcache_get(cache.get(), "triton", "k", 1, &entry, nullptr), KCACHE_OK);
  kcache_entry_free(entry);
  ASSERT_EQ(kcache_get(cache.get(), "triton", "missing", 7, &entry, nullptr), KCACHE_OK);

  const nlohmann::json mine = stats_json(cache.get(), 0);
  EXPECT_EQ(mine["all_processes"], false);
  const nlohmann::json& counts = mine["counts"];
  for (const char* name : {"requests",      "memory_hits",      "system_hits",
                           "user_hits",     "compiles",         "compile_failures",
                           "failure_hits",  "compile_micros",   "compile_micros_saved",
                           "bytes_served",  "bytes_stored",     "evicted",
                           "expired",       "corrupt_entries",  "store_failures",
                           "lock_waits",    "lock_wait_micros", "lock_timeouts",
                           "breaker_trips", "rejected",         "uncacheable"}) {
    EXPECT_TRUE(counts.contains(name)) << name;
  }
  EXPECT_EQ(counts["requests"], 2);
  EXPECT_EQ(counts["compiles"], 1);
  EXPECT_EQ(counts["memory_hits"], 1);
  ASSERT_TRUE(mine["tiers"].is_array());
  ASSERT_FALSE(mine["tiers"].empty());
  EXPECT_EQ(mine["tiers"][0]["tier"], "memory");
  EXPECT_TRUE(mine["tiers"][0].contains("misses"));
  ASSERT_EQ(mine["namespaces"].size(), 1u);
  const nlohmann::json& triton = mine["namespaces"][0];
  EXPECT_EQ(triton["name"], "triton");
  EXPECT_EQ(triton["gets"], 2);
  EXPECT_EQ(triton["hits"], 1);
  EXPECT_EQ(triton["puts"], 1);
  EXPECT_EQ(triton["waits"], 0);
  EXPECT_EQ(triton["bytes_served"], 3);
  EXPECT_GE(triton["bytes_stored"].get<long long>(), 3);  // the entry as stored

  const nlohmann::json all = stats_json(cache.get(), 1);
  EXPECT_EQ(all["all_processes"], true);
  EXPECT_EQ(all["counted"], true);
  EXPECT_EQ(all["counts_problem"], "");
  EXPECT_GT(all["since_unix"].get<long long>(), 0);
  EXPECT_EQ(all["counts"]["requests"], 2);
  EXPECT_EQ(all["counts"]["compiles"], 1);
  EXPECT_EQ(all["entries"], 2);  // the kernel and the client entry
  EXPECT_GT(all["bytes"].get<long long>(), 0);
  EXPECT_EQ(all["databases"], 2);
  EXPECT_EQ(all["namespaces"], mine["namespaces"]);  // this process's

  ASSERT_EQ(kcache_zero_stats(cache.get(), &error), KCACHE_OK) << take_error(error);
  EXPECT_EQ(stats_json(cache.get(), 1)["counts"]["requests"], 0);
}

}  // namespace
