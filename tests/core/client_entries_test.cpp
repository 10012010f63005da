// Client-keyed entries (Cache::get, put, claim): a JIT's own bytes under
// its own keys, in the same tiers, with the same checks, and the single
// flight of kernels for its keys.
#include "core/client_entries.h"

#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "fakes/cache_fixture.h"

namespace kcache {
namespace {

std::span<const std::uint8_t> bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

std::string text_of(const CachedKernel& kernel) {
  return {kernel.binary().begin(), kernel.binary().end()};
}

class ClientEntriesTest : public testing::CacheFixture {
 protected:
  const NamespaceCounts* counts_of(const CacheStats& stats, std::string_view name) {
    for (const auto& counts : stats.namespaces) {
      if (counts.name == name) {
        last_counts_ = counts;
        return &last_counts_;
      }
    }
    return nullptr;
  }
  NamespaceCounts last_counts_;
};

TEST_F(ClientEntriesTest, APutIsGotBackFromMemoryThenFromTheUserTier) {
  {
    auto cache = open();
    auto miss = cache->get("triton", "abc123");
    ASSERT_TRUE(miss.is_ok()) << miss.status().to_string();
    EXPECT_FALSE(miss->has_value());
    ASSERT_TRUE(
        cache->put("triton", "abc123", bytes("cubin bytes"), {{"triton.version", "3.6"}}).is_ok());
    auto hit = cache->get("triton", "abc123");
    ASSERT_TRUE(hit.is_ok() && hit->has_value());
    EXPECT_EQ((*hit)->tier, TierKind::kMemory);
    EXPECT_EQ(text_of(**hit), "cubin bytes");
  }
  auto later = open();  // another process
  auto hit = later->get("triton", "abc123");
  ASSERT_TRUE(hit.is_ok() && hit->has_value());
  EXPECT_EQ((*hit)->tier, TierKind::kUser);
  EXPECT_EQ(text_of(**hit), "cubin bytes");
  EXPECT_EQ((*hit)->metadata("triton.version"), "3.6");
  EXPECT_EQ((*hit)->db, "client.triton");
  EXPECT_TRUE(std::filesystem::exists(dir / "cache/" KCACHE_VERSION_STRING "/client.triton.ukdb"));
}

TEST_F(ClientEntriesTest, NamespacesAndKeysAreApart) {
  auto cache = open();
  ASSERT_TRUE(cache->put("triton", "k", bytes("triton's")).is_ok());
  ASSERT_TRUE(cache->put("inductor", "k", bytes("inductor's")).is_ok());
  ASSERT_TRUE(cache->put("triton", "k2", bytes("another")).is_ok());
  auto again = open();
  EXPECT_EQ(text_of(**again->get("triton", "k")), "triton's");
  EXPECT_EQ(text_of(**again->get("inductor", "k")), "inductor's");
  EXPECT_EQ(text_of(**again->get("triton", "k2")), "another");
  EXPECT_FALSE(again->get("cupy", "k")->has_value());
  // A put replaces what the key held.
  ASSERT_TRUE(again->put("triton", "k", bytes("newer")).is_ok());
  EXPECT_EQ(text_of(**open()->get("triton", "k")), "newer");
}

TEST_F(ClientEntriesTest, BadNamespacesKeysAndBytesAreRefused) {
  auto cache = open();
  for (std::string_view name : {"", ".hidden", "a/b", "has space", "é"}) {
    EXPECT_EQ(cache->get(name, "k").status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(cache->put(name, "k", bytes("x")).code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_EQ(cache->get(std::string(65, 'a'), "k").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cache->get(std::string(64, 'a'), "k").is_ok());
  EXPECT_EQ(cache->get("triton", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->get("triton", std::string(4097, 'k')).status().code(),
            StatusCode::kInvalidArgument);
  const std::string binary_key("\0\n\\key", 6);  // any bytes
  ASSERT_TRUE(cache->put("triton", binary_key, bytes("odd key")).is_ok());
  EXPECT_EQ(text_of(**open()->get("triton", binary_key)), "odd key");
  EXPECT_EQ(cache->put("triton", "k", {}).code(), StatusCode::kInvalidArgument);
}

// A kernel's target cannot name a client namespace's database.
TEST_F(ClientEntriesTest, NoKernelTargetNamesAClientDatabase) {
  KernelRequest req = request();
  req.target = *Target::parse("client.triton");
  auto got = open()->get_or_compile(req, compiler);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << got.status().to_string();
  EXPECT_EQ(compiler.compiles, 0);
}

TEST_F(ClientEntriesTest, EachNamespaceIsCountedApartFromKernels) {
  auto cache = open();
  (void)cache->get("triton", "a");
  ASSERT_TRUE(cache->put("triton", "a", bytes("12345")).is_ok());
  (void)cache->get("triton", "a");
  (void)cache->get("cupy", "z");
  const CacheStats stats = cache->stats();
  EXPECT_EQ(stats.requests, 0u) << "client entries are not kernel requests";
  ASSERT_EQ(stats.namespaces.size(), 2u);
  EXPECT_EQ(stats.namespaces[0].name, "cupy");
  const NamespaceCounts* triton = counts_of(stats, "triton");
  ASSERT_NE(triton, nullptr);
  EXPECT_EQ(triton->gets, 2u);
  EXPECT_EQ(triton->hits, 1u);
  EXPECT_EQ(triton->puts, 1u);
  EXPECT_EQ(triton->bytes_served, 5u);
  EXPECT_GT(triton->bytes_stored, 5u);  // the entry, header and key included
}

// `kcache stats` adds up every process's counts of each namespace (a file
// of the namespace's own beside the folder's), and zeroes them with the
// rest.
TEST_F(ClientEntriesTest, EachNamespaceIsCountedForTheFolderAcrossProcesses) {
  {
    auto first = open();
    ASSERT_TRUE(first->put("triton", "a", bytes("12345")).is_ok());
    (void)first->get("triton", "a");
    (void)first->get("cupy", "z");  // counted before the folder's counts were shared, too
  }
  {
    auto second = open();  // another process
    (void)second->get("triton", "a");
    (void)second->get("triton", "b");
    ASSERT_TRUE(second->put("cupy", "z", bytes("xy")).is_ok());
  }
  auto admin = open();
  auto folder = CacheAdmin(*admin).folder_stats();
  ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
  ASSERT_EQ(folder->counts.namespaces.size(), 2u);
  const NamespaceCounts& cupy = folder->counts.namespaces[0];
  const NamespaceCounts& triton = folder->counts.namespaces[1];
  EXPECT_EQ(cupy.name, "cupy");
  EXPECT_EQ(cupy.puts, 1u);
  EXPECT_EQ(triton.name, "triton");
  EXPECT_EQ(triton.gets, 3u);
  EXPECT_EQ(triton.hits, 2u);
  EXPECT_EQ(triton.puts, 1u);
  EXPECT_EQ(triton.bytes_served, 10u);
  EXPECT_EQ(folder->counts.requests, 0u) << "client entries are not kernel requests";
  EXPECT_TRUE(std::filesystem::exists(dir / "cache/" KCACHE_VERSION_STRING
                                            "/kcache.stats.client.triton.stats"));

  ASSERT_TRUE(CacheAdmin(*admin).zero_stats().is_ok());
  auto zeroed = CacheAdmin(*admin).folder_stats();
  ASSERT_TRUE(zeroed.is_ok());
  for (const NamespaceCounts& n : zeroed->counts.namespaces) {
    EXPECT_EQ(n.gets + n.hits + n.puts + n.bytes_served + n.bytes_stored, 0u) << n.name;
  }
}

TEST_F(ClientEntriesTest, ADisabledCacheKeepsNothing) {
  CacheOptions off;
  off.disable_cache = true;
  auto cache = open(off);
  EXPECT_TRUE(cache->put("triton", "a", bytes("x")).is_ok());
  EXPECT_FALSE(cache->get("triton", "a")->has_value());
  EXPECT_FALSE(std::filesystem::exists(dir / "cache"));
}

// The key is derived from the namespace and the client's key whole, and a
// read compares that whole material (ClientEntries::lookup).
TEST_F(ClientEntriesTest, TheKeyIsTheNamespaceAndTheClientKeyWhole) {
  auto k = client_key("triton", "right");
  auto other = client_key("triton", "wrong");
  ASSERT_TRUE(k.is_ok() && other.is_ok());
  EXPECT_NE(k->key, other->key);
  EXPECT_NE(k->material, other->material);
  EXPECT_EQ(k->db, "client.triton");
  // The same namespace and key always make the same key.
  EXPECT_EQ(client_key("triton", "right")->key, k->key);
}

TEST_F(ClientEntriesTest, AClaimWaitsForTheHolderAndGetsItsBytes) {
  auto cache = open();
  auto first = cache->claim("triton", "slow");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_TRUE(first->held());
  EXPECT_FALSE(first->found().has_value());

  std::optional<std::string> seen;
  bool second_held = true;
  std::thread waiter([&] {
    auto second = cache->claim("triton", "slow");
    ASSERT_TRUE(second.is_ok());
    second_held = second->held();
    if (second->found()) seen = text_of(*second->found());
  });
  // Whether the waiter joined before the finish (it waits on the flight)
  // or after (it finds the entry), it computes nothing and gets the bytes.
  ASSERT_TRUE(first->finish(bytes("computed once")).is_ok());
  waiter.join();
  EXPECT_FALSE(second_held);
  EXPECT_EQ(seen, "computed once");
  EXPECT_FALSE(first->held());
  EXPECT_EQ(first->finish(bytes("again")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text_of(**open()->get("triton", "slow")), "computed once");
}

TEST_F(ClientEntriesTest, AnAbandonedClaimPassesToAWaiter) {
  auto cache = open();
  auto first = cache->claim("triton", "k");
  ASSERT_TRUE(first.is_ok() && first->held());
  bool second_held = false;
  std::thread waiter([&] {
    auto second = cache->claim("triton", "k");
    ASSERT_TRUE(second.is_ok());
    second_held = second->held();
    if (second_held) {
      ASSERT_TRUE(second->finish(bytes("second's")).is_ok());
    }
  });
  first->abandon();
  waiter.join();
  // Whichever way the race went (the waiter joined before or after the
  // abandon), it held the key and stored its bytes.
  EXPECT_TRUE(second_held);
  EXPECT_EQ(text_of(**open()->get("triton", "k")), "second's");
}

TEST_F(ClientEntriesTest, ADroppedClaimIsAbandoned) {
  auto cache = open();
  { auto dropped = cache->claim("triton", "k"); }
  auto next = cache->claim("triton", "k");
  ASSERT_TRUE(next.is_ok());
  EXPECT_TRUE(next->held());
}

TEST_F(ClientEntriesTest, AClaimOfAStoredKeyFindsIt) {
  auto cache = open();
  ASSERT_TRUE(cache->put("triton", "k", bytes("there")).is_ok());
  auto claim = open()->claim("triton", "k");
  ASSERT_TRUE(claim.is_ok());
  EXPECT_FALSE(claim->held());
  ASSERT_TRUE(claim->found().has_value());
  EXPECT_EQ(text_of(*claim->found()), "there");
}

// Across processes: the key's lock in the user tier. A child holds the
// claim until told to finish; the parent's claim waits, then finds the
// child's bytes.
TEST_F(ClientEntriesTest, AClaimInAnotherProcessIsWaitedFor) {
  int to_child[2];
  int to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto cache = open();
    auto claim = cache->claim("triton", "shared");
    const char held = claim.is_ok() && claim->held() ? 'h' : 'n';
    (void)!::write(to_parent[1], &held, 1);
    char go = 0;
    (void)!::read(to_child[0], &go, 1);
    const bool done = claim.is_ok() && claim->finish(bytes("the child's")).is_ok();
    ::_exit(done ? 0 : 1);
  }
  char held = 0;
  ASSERT_EQ(::read(to_parent[0], &held, 1), 1);
  ASSERT_EQ(held, 'h');
  // The child finishes while the parent claims: whether the parent finds
  // the lock taken (it waits, polling) or the entry stored, it computes
  // nothing and gets the child's bytes.
  std::thread release([&] { (void)!::write(to_child[1], "g", 1); });
  auto cache = open();
  auto claim = cache->claim("triton", "shared");
  release.join();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(claim.is_ok());
  ASSERT_TRUE(claim->found().has_value()) << "the parent computed it too";
  EXPECT_FALSE(claim->held());
  EXPECT_EQ(text_of(*claim->found()), "the child's");
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
}

// A namespace's entries exported as a package are served from the system
// folder, with no "missing package" warning for namespaces that have none.
TEST_F(ClientEntriesTest, ANamespacesPackageIsServedFromTheSystemFolder) {
  {
    auto cache = open();
    ASSERT_TRUE(cache->put("triton", "k", bytes("packaged")).is_ok());
    std::filesystem::create_directories(dir / "system");
    auto exported = CacheAdmin(*cache).export_db("client.triton", dir / "system/client.triton.kdb");
    ASSERT_TRUE(exported.is_ok()) << exported.status().to_string();
    EXPECT_EQ(*exported, 1u);
  }
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "elsewhere";
  auto cache = open();
  auto hit = cache->get("triton", "k");
  ASSERT_TRUE(hit.is_ok() && hit->has_value());
  EXPECT_EQ((*hit)->tier, TierKind::kSystem);
  EXPECT_EQ(text_of(**hit), "packaged");
  EXPECT_FALSE(cache->get("cupy", "k")->has_value());
  EXPECT_EQ(log_lines_containing("Missing system database"), 0);
}

// Client entries count toward the user tier's limits like kernels.
TEST_F(ClientEntriesTest, TheLimitsHoldForClientEntries) {
  env.vars["KCACHE_MAX_ENTRIES"] = "4";
  auto cache = open();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(cache->put("triton", "k" + std::to_string(i), bytes("entry")).is_ok());
  }
  auto pruned = CacheAdmin(*cache).prune();
  ASSERT_TRUE(pruned.is_ok()) << pruned.status().to_string();
  auto listed = CacheAdmin(*open()).list();
  ASSERT_TRUE(listed.is_ok());
  EXPECT_LE(listed->size(), 4u);
}

}  // namespace
}  // namespace kcache
