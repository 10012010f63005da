// The C API of client-keyed entries: kcache_get and kcache_put with keys
// of any bytes, and the claim, the single flight of client keys, across
// threads.
#include <kcache/c_api.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "c_api/c_api_fixture.h"
#include "fakes/temp_folder.h"

namespace {

using kcache::testing::bytes_of;
using kcache::testing::CachePtr;
using kcache::testing::ClaimPtr;
using kcache::testing::EntryPtr;
using kcache::testing::open_in;
using kcache::testing::open_with;
using kcache::testing::options_in;
using kcache::testing::take_error;
using kcache::testing::TempFolder;

EntryPtr get(kcache_cache* cache, const char* name_space, const std::string& key) {
  kcache_entry* entry = nullptr;
  char* error = nullptr;
  EXPECT_EQ(kcache_get(cache, name_space, key.data(), key.size(), &entry, &error), KCACHE_OK)
      << take_error(error);
  return EntryPtr(entry);
}

ClaimPtr claim(kcache_cache* cache, const char* name_space, const std::string& key) {
  kcache_client_claim* claimed = nullptr;
  char* error = nullptr;
  EXPECT_EQ(kcache_claim(cache, name_space, key.data(), key.size(), &claimed, &error), KCACHE_OK)
      << take_error(error);
  return ClaimPtr(claimed);
}

int finish(kcache_client_claim* claim, const std::string& bytes) {
  char* error = nullptr;
  const int rc =
      kcache_claim_finish(claim, bytes.data(), bytes.size(), nullptr, nullptr, 0, &error);
  EXPECT_EQ(rc, KCACHE_OK) << take_error(error);
  return rc;
}

// A miss is success with no entry; what is put comes back, bytes and
// metadata, whatever bytes the key holds; another cache on the folder
// finds it in the user tier.
TEST(CApiEntriesTest, PutAndGetWithKeysOfAnyBytes) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  const std::string key("triton\0key\xff", 11);
  EXPECT_EQ(get(cache.get(), "triton", key), nullptr);

  const std::string bytes("compiled\0bytes", 14);
  const char* const names[] = {"triton.version", "arch"};
  const char* const values[] = {"3.6.0", "sm_90"};
  char* error = nullptr;
  ASSERT_EQ(kcache_put(cache.get(), "triton", key.data(), key.size(), bytes.data(), bytes.size(),
                       names, values, 2, &error),
            KCACHE_OK)
      << take_error(error);
  EXPECT_EQ(error, nullptr);
  EntryPtr entry = get(cache.get(), "triton", key);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(bytes_of(entry.get()), bytes);
  EXPECT_STREQ(kcache_entry_tier(entry.get()), "memory");
  EXPECT_STREQ(kcache_entry_metadata(entry.get(), "triton.version"), "3.6.0");
  EXPECT_STREQ(kcache_entry_metadata(entry.get(), "arch"), "sm_90");
  EXPECT_EQ(kcache_entry_metadata(entry.get(), "other"), nullptr);
  ASSERT_EQ(kcache_entry_metadata_count(entry.get()), 2u);
  EXPECT_STREQ(kcache_entry_metadata_name(entry.get(), 1), "arch");
  EXPECT_STREQ(kcache_entry_metadata_value(entry.get(), 1), "sm_90");
  EXPECT_EQ(kcache_entry_metadata_name(entry.get(), 2), nullptr);
  EXPECT_EQ(kcache_entry_metadata_value(entry.get(), 2), nullptr);

  // The whole key counts, past its NUL byte; so does the namespace.
  EXPECT_EQ(get(cache.get(), "triton", std::string("triton\0key\xfe", 11)), nullptr);
  EXPECT_EQ(get(cache.get(), "triton", "triton"), nullptr);
  EXPECT_EQ(get(cache.get(), "inductor", key), nullptr);

  CachePtr other = open_in(dir);
  EntryPtr from_disk = get(other.get(), "triton", key);
  ASSERT_NE(from_disk, nullptr);
  EXPECT_STREQ(kcache_entry_tier(from_disk.get()), "user");
  EXPECT_EQ(bytes_of(from_disk.get()), bytes);
  EXPECT_STREQ(kcache_entry_metadata(from_disk.get(), "triton.version"), "3.6.0");
  // An entry owns its bytes: it outlives its cache.
  other.reset();
  EXPECT_EQ(bytes_of(from_disk.get()), bytes);
}

TEST(CApiEntriesTest, OutOfBoundsAndNullAreInvalid) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  kcache_entry* entry = nullptr;
  char* error = nullptr;
  const std::string long_key(4097, 'k');
  const std::string long_space(65, 'n');
  EXPECT_EQ(kcache_get(cache.get(), ".hidden", "k", 1, &entry, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error), "");
  EXPECT_EQ(kcache_get(cache.get(), "", "k", 1, &entry, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), long_space.c_str(), "k", 1, &entry, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), "ns", "k", 0, &entry, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), "ns", long_key.data(), long_key.size(), &entry, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), "ns", nullptr, 3, &entry, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), nullptr, "k", 1, &entry, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(nullptr, "ns", "k", 1, &entry, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_get(cache.get(), "ns", "k", 1, nullptr, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(entry, nullptr);

  EXPECT_EQ(kcache_put(cache.get(), "ns", "k", 1, "", 0, nullptr, nullptr, 0, &error),
            KCACHE_INVALID_ARGUMENT);  // no bytes
  EXPECT_NE(take_error(error), "");
  EXPECT_EQ(kcache_put(cache.get(), "ns", "k", 1, nullptr, 4, nullptr, nullptr, 0, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("data is NULL"), std::string::npos);
  const char* const names[] = {"name"};
  EXPECT_EQ(kcache_put(cache.get(), "ns", "k", 1, "b", 1, names, nullptr, 1, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("metadata_values is NULL"), std::string::npos);
  EXPECT_EQ(kcache_put(nullptr, "ns", "k", 1, "b", 1, nullptr, nullptr, 0, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_put(cache.get(), ".ns", "k", 1, "b", 1, nullptr, nullptr, 0, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(get(cache.get(), "ns", "k"), nullptr);  // nothing was kept

  kcache_client_claim* claimed = nullptr;
  EXPECT_EQ(kcache_claim(cache.get(), "ns", "k", 0, &claimed, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_claim(cache.get(), "ns", "k", 1, nullptr, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_claim(nullptr, "ns", "k", 1, &claimed, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(claimed, nullptr);
  EXPECT_EQ(kcache_claim_state(nullptr), 0);
  EXPECT_EQ(kcache_claim_entry(nullptr), nullptr);
  EXPECT_EQ(kcache_claim_finish(nullptr, "b", 1, nullptr, nullptr, 0, nullptr),
            KCACHE_INVALID_ARGUMENT);
  kcache_claim_abandon(nullptr);
  kcache_claim_free(nullptr);
  EXPECT_EQ(kcache_entry_data(nullptr), nullptr);
  EXPECT_EQ(kcache_entry_size(nullptr), 0u);
  EXPECT_STREQ(kcache_entry_tier(nullptr), "");
  EXPECT_EQ(kcache_entry_metadata(nullptr, "a"), nullptr);
  EXPECT_EQ(kcache_entry_metadata_count(nullptr), 0u);
  EXPECT_EQ(kcache_entry_metadata_name(nullptr, 0), nullptr);
  EXPECT_EQ(kcache_entry_metadata_value(nullptr, 0), nullptr);
  kcache_entry_free(nullptr);
}

// A claim of a key nobody has is held; finishing it stores the bytes; a
// later claim finds them. Finishing what is not held is refused.
TEST(CApiEntriesTest, ClaimHoldsFinishesAndFinds) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  ClaimPtr first = claim(cache.get(), "inductor", "graph-1");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(kcache_claim_state(first.get()), KCACHE_CLAIM_HELD);
  EXPECT_EQ(kcache_claim_entry(first.get()), nullptr);
  const char* const names[] = {"kind"};
  const char* const values[] = {"fx"};
  char* error = nullptr;
  ASSERT_EQ(kcache_claim_finish(first.get(), "code", 4, names, values, 1, &error), KCACHE_OK)
      << take_error(error);
  EXPECT_EQ(kcache_claim_state(first.get()), KCACHE_CLAIM_NOT_HELD);
  EXPECT_EQ(kcache_claim_finish(first.get(), "code", 4, nullptr, nullptr, 0, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("does not hold"), std::string::npos);

  ClaimPtr second = claim(cache.get(), "inductor", "graph-1");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(kcache_claim_state(second.get()), KCACHE_CLAIM_FOUND);
  const kcache_entry* found = kcache_claim_entry(second.get());
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(bytes_of(found), "code");
  EXPECT_STREQ(kcache_entry_metadata(found, "kind"), "fx");
  EXPECT_EQ(kcache_claim_finish(second.get(), "x", 1, nullptr, nullptr, 0, nullptr),
            KCACHE_INVALID_ARGUMENT);
  kcache_claim_abandon(second.get());  // nothing held: nothing to do
  EXPECT_EQ(kcache_claim_state(second.get()), KCACHE_CLAIM_FOUND);

  // A finish with bad arguments still releases the key.
  ClaimPtr third = claim(cache.get(), "inductor", "graph-2");
  ASSERT_EQ(kcache_claim_state(third.get()), KCACHE_CLAIM_HELD);
  EXPECT_EQ(kcache_claim_finish(third.get(), nullptr, 3, nullptr, nullptr, 0, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_claim_state(third.get()), KCACHE_CLAIM_NOT_HELD);
  ClaimPtr fourth = claim(cache.get(), "inductor", "graph-2");
  EXPECT_EQ(kcache_claim_state(fourth.get()), KCACHE_CLAIM_HELD);
}

// The single flight: while one thread holds a key, another that claims it
// waits, then finds what the first finished. Nothing is computed twice.
TEST(CApiEntriesTest, ASecondClaimantWaitsForTheFirstsBytes) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  ClaimPtr holder = claim(cache.get(), "triton", "kernel-A");
  ASSERT_EQ(kcache_claim_state(holder.get()), KCACHE_CLAIM_HELD);
  std::atomic<int> state{-1};
  std::string seen;
  std::thread waiter([&] {
    ClaimPtr second = claim(cache.get(), "triton", "kernel-A");
    if (second == nullptr) return;
    if (const kcache_entry* entry = kcache_claim_entry(second.get())) seen = bytes_of(entry);
    state = kcache_claim_state(second.get());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(state.load(), -1);  // still waiting
  finish(holder.get(), "computed once");
  waiter.join();
  EXPECT_EQ(state.load(), KCACHE_CLAIM_FOUND);
  EXPECT_EQ(seen, "computed once");
}

// Freeing a held claim abandons it: a waiter then holds the key.
TEST(CApiEntriesTest, AnAbandonedKeyPassesToAWaiter) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  ClaimPtr holder = claim(cache.get(), "triton", "kernel-B");
  ASSERT_EQ(kcache_claim_state(holder.get()), KCACHE_CLAIM_HELD);
  std::atomic<int> state{-1};
  std::thread waiter([&] {
    ClaimPtr second = claim(cache.get(), "triton", "kernel-B");
    if (second == nullptr) return;
    state = kcache_claim_state(second.get());
    if (state == KCACHE_CLAIM_HELD) finish(second.get(), "computed by the waiter");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  holder.reset();  // kcache_claim_free of a held claim
  waiter.join();
  EXPECT_EQ(state.load(), KCACHE_CLAIM_HELD);
  EntryPtr entry = get(cache.get(), "triton", "kernel-B");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(bytes_of(entry.get()), "computed by the waiter");
}

// A wait for another claimant is bounded by the lock timeout: then the
// claim is neither found nor held, and the caller may compute and put.
TEST(CApiEntriesTest, AWaitThatRunsOutHoldsNothing) {
  TempFolder dir;
  kcache_cache_options options = options_in(dir);
  options.lock_timeout = "200ms";
  CachePtr cache = open_with(options);
  ClaimPtr holder = claim(cache.get(), "jax", "k");
  ASSERT_EQ(kcache_claim_state(holder.get()), KCACHE_CLAIM_HELD);
  std::atomic<int> state{-1};
  std::thread waiter([&] {
    ClaimPtr second = claim(cache.get(), "jax", "k");
    if (second != nullptr) state = kcache_claim_state(second.get());
  });
  waiter.join();
  EXPECT_EQ(state.load(), KCACHE_CLAIM_NOT_HELD);
  kcache_claim_abandon(holder.get());
  EXPECT_EQ(kcache_claim_state(holder.get()), KCACHE_CLAIM_NOT_HELD);
}

}  // namespace
