// Cache::refine: a binary the driver made better replaces the entry's, in
// this process and the next, keeping everything else; never over an entry
// that changed meanwhile, never where there is no user cache.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fakes/cache_fixture.h"

namespace kcache {
namespace {

class CacheRefineTest : public testing::CacheFixture {};

std::string bytes_of(const CachedKernel& kernel) {
  return {kernel.binary().begin(), kernel.binary().end()};
}

std::vector<std::uint8_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

TEST_F(CacheRefineTest, ARefinedBinaryIsServedNowAndToTheNextProcess) {
  auto cache = open();
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const std::string original = bytes_of(*first);
  const auto better = bytes(original + " with work-group code");
  auto refined = AdvancedCache(*cache).refine(*first, better, "PoCL work-group code (2 files)");
  ASSERT_TRUE(refined.is_ok()) << refined.status().to_string();
  EXPECT_EQ(bytes_of(*refined), original + " with work-group code");
  EXPECT_EQ(refined->metadata(kRefinedField), "PoCL work-group code (2 files)");

  auto again = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kMemory);
  EXPECT_EQ(bytes_of(*again), original + " with work-group code");

  auto next = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(next.is_ok());
  EXPECT_EQ(next->tier, TierKind::kUser);
  EXPECT_EQ(bytes_of(*next), original + " with work-group code");
  // The compiler's metadata stays; the key is the same.
  EXPECT_EQ(next->key, first->key);
  for (const auto& [name, value] : first->metadata_fields) {
    if (name != kRefinedField) {
      EXPECT_EQ(next->metadata(name), value) << name;
    }
  }
  EXPECT_EQ(next->metadata(kRefinedField), "PoCL work-group code (2 files)");
  EXPECT_EQ(compiler.compiles, 1);
}

// Refined again (more launch shapes in a later run): the newest is served,
// one "refined" field says why.
TEST_F(CacheRefineTest, ARefinedEntryCanBeRefinedAgain) {
  auto cache = open();
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  auto once = AdvancedCache(*cache).refine(*first, bytes("once"), "one");
  ASSERT_TRUE(once.is_ok());
  auto twice = AdvancedCache(*open()).refine(*once, bytes("twice"), "two");
  ASSERT_TRUE(twice.is_ok()) << twice.status().to_string();
  auto next = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(next.is_ok());
  EXPECT_EQ(bytes_of(*next), "twice");
  int fields = 0;
  for (const auto& field : next->metadata_fields) fields += field.first == kRefinedField ? 1 : 0;
  EXPECT_EQ(fields, 1);
  EXPECT_EQ(next->metadata(kRefinedField), "two");
}

// The entry changed since the kernel was read (another process refined or
// removed it): what is there now stays. (A process sees what its index of
// the log holds; one that refines after another did, unseen, wins: both
// binaries serve the request.)
TEST_F(CacheRefineTest, AnEntryThatChangedSinceItWasReadIsLeftAlone) {
  auto first = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  ASSERT_TRUE(AdvancedCache(*open()).refine(*first, bytes("theirs"), "other process").is_ok());
  auto mine = AdvancedCache(*open()).refine(*first, bytes("mine"), "this process");
  ASSERT_FALSE(mine.is_ok());
  EXPECT_EQ(mine.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bytes_of(*open()->get_or_compile(request(), compiler)), "theirs");

  ASSERT_TRUE(CacheAdmin(*open()).clear().is_ok());
  auto gone = AdvancedCache(*open()).refine(*first, bytes("mine"), "this process");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  auto recompiled = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(recompiled.is_ok());
  EXPECT_EQ(recompiled->tier, TierKind::kCompiled);
  EXPECT_EQ(bytes_of(*recompiled), bytes_of(*first));
}

TEST_F(CacheRefineTest, NothingIsRefinedWithTheCacheOffOrAnEmptyBinary) {
  auto cache = open();
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(AdvancedCache(*cache).refine(*first, {}, "empty").status().code(),
            StatusCode::kInvalidArgument);

  env.vars["KCACHE_DISABLE_CACHE"] = "1";
  auto off = open();
  auto refused = AdvancedCache(*off).refine(*first, bytes("better"), "off");
  EXPECT_EQ(refused.status().code(), StatusCode::kNotSupported);
  env.vars.erase("KCACHE_DISABLE_CACHE");
  EXPECT_EQ(bytes_of(*open()->get_or_compile(request(), compiler)), bytes_of(*first));
}

}  // namespace
}  // namespace kcache
