#include "store/user/eviction.h"

#include <gtest/gtest.h>

namespace kcache::userlog {
namespace {

std::vector<bool> evicted(const EvictionPlan& plan) { return plan.evict; }

TEST(EvictionTest, NothingGoesWithinTheLimits) {
  const std::vector<Candidate> all = {{100, 5}, {100, 6}, {100, 7}};
  const EvictionPlan plan = plan_eviction(all, {1000, 3, 0}, 600, 0);
  EXPECT_EQ(evicted(plan), std::vector<bool>({false, false, false}));
  EXPECT_EQ(plan.kept_bytes, 300u);
  EXPECT_EQ(plan.kept_entries, 3u);
  const EvictionPlan none = plan_eviction(all, {}, 600, 0);  // no limits at all
  EXPECT_EQ(none.over_limits + none.expired, 0u);
}

TEST(EvictionTest, PastTheSizeTheLeastRecentlyUsedGoDownToNinetyPercent) {
  // 10 entries of 100 bytes, used at minutes 9, 8, ..., 0, and 50 fixed bytes.
  std::vector<Candidate> all;
  for (std::uint32_t i = 0; i < 10; ++i) all.push_back({100, 9 - i});
  const EvictionPlan plan = plan_eviction(all, {1000, 0, 0}, 1200, 50);
  // 1050 > 1000: down to 900 or less, the oldest first (the last ones).
  EXPECT_LE(plan.kept_bytes, 900u);
  EXPECT_EQ(plan.kept_bytes, 850u);
  EXPECT_EQ(plan.over_limits, 2u);
  EXPECT_EQ(evicted(plan), std::vector<bool>({false, false, false, false, false, false, false,
                                              false, true, true}));
}

TEST(EvictionTest, PastTheCountTheLeastRecentlyUsedGo) {
  std::vector<Candidate> all;
  for (std::uint32_t i = 0; i < 20; ++i) all.push_back({10, i});
  const EvictionPlan plan = plan_eviction(all, {0, 10, 0}, 1800, 0);
  EXPECT_EQ(plan.kept_entries, 9u);
  for (std::uint32_t i = 0; i < 20; ++i) EXPECT_EQ(plan.evict[i], i < 11) << i;
}

TEST(EvictionTest, EntriesUnusedForLongerThanTheAgeLimitExpire) {
  const std::vector<Candidate> all = {{10, 100}, {10, 40}, {10, 41}, {10, 39}};
  // 60 minutes: used at minute 40 or later is kept at minute 100.
  const EvictionPlan plan = plan_eviction(all, {0, 0, 3600}, 6000, 0);
  EXPECT_EQ(evicted(plan), std::vector<bool>({false, false, false, true}));
  EXPECT_EQ(plan.expired, 1u);
  EXPECT_EQ(plan.over_limits, 0u);
}

TEST(EvictionTest, AnAgeBelowAMinuteCountsFromTheStartOfTheMinuteOfUse) {
  // Used in minute 100; two seconds into minute 101 it is over 1 s idle.
  const std::vector<Candidate> all = {{10, 100}, {10, 101}};
  const EvictionPlan plan = plan_eviction(all, {0, 0, 1}, 101 * 60 + 2, 0);
  EXPECT_EQ(evicted(plan), std::vector<bool>({true, true}));
  const EvictionPlan later = plan_eviction(all, {0, 0, 90}, 101 * 60 + 2, 0);
  EXPECT_EQ(evicted(later), std::vector<bool>({false, false}));
}

TEST(EvictionTest, AmongEntriesUsedInOneMinuteTheFirstGivenGoFirst) {
  const std::vector<Candidate> all = {{100, 6}, {400, 5}, {200, 5}, {300, 5}};
  const EvictionPlan plan = plan_eviction(all, {600, 0, 0}, 300, 0);
  EXPECT_EQ(evicted(plan), std::vector<bool>({false, true, true, false}));
}

TEST(EvictionTest, WhenTheFixedBytesAloneAreOverEverythingGoes) {
  const std::vector<Candidate> all = {{10, 1}, {10, 2}};
  const EvictionPlan plan = plan_eviction(all, {100, 0, 0}, 300, 500);
  EXPECT_EQ(evicted(plan), std::vector<bool>({true, true}));
  EXPECT_EQ(plan.kept_entries, 0u);
}

}  // namespace
}  // namespace kcache::userlog
