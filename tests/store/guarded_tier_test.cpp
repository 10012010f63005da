#include "store/guarded_tier.h"

#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "base/hash.h"

namespace kcache {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A tier that fails while told to, and counts the calls that reach it.
class FlakyTier final : public Tier {
 public:
  std::string_view name() const override { return "flaky"; }
  Result<std::optional<Entry>> get(const DbNames&, const CacheKey&) override {
    ++gets;
    if (during_get) std::exchange(during_get, nullptr)();
    if (reads_fail) return Status::io_error("cannot read: Input/output error");
    return hit ? std::optional<Entry>(Entry{}) : std::nullopt;
  }
  Status put(const std::string&, const Entry&, std::span<const std::uint8_t>) override {
    ++puts;
    return writes_fail ? Status::io_error("cannot write: No space left on device") : Status::ok();
  }
  std::function<void()> during_get;  // called once, inside the next get
  bool reads_fail = false;
  bool writes_fail = false;
  bool hit = false;
  int gets = 0;
  int puts = 0;
};

class GuardedTierTest : public ::testing::Test {
 protected:
  GuardedTierTest() {
    auto inner = std::make_unique<FlakyTier>();
    flaky_ = inner.get();
    tier_ = std::make_unique<GuardedTier>(std::move(inner),
                                          BreakerPolicy{3, milliseconds(100), milliseconds(350)},
                                          [this] { return now_; });
  }
  bool get_fails() { return !tier_->get(names_, key_).is_ok(); }
  bool put_fails() { return !tier_->put("db", Entry{}, {}).is_ok(); }

  FlakyTier* flaky_;
  std::unique_ptr<GuardedTier> tier_;
  Clock::time_point now_{};
  const DbNames names_{"db", "db"};
  const CacheKey key_{xxh3_128("k")};
};

TEST_F(GuardedTierTest, OpensAfterFailuresInARowAndStopsCallingTheTier) {
  flaky_->reads_fail = true;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(get_fails());
  EXPECT_EQ(flaky_->gets, 3);
  EXPECT_EQ(tier_->counters().trips, 1u);
  for (int i = 0; i < 10; ++i) {
    auto got = tier_->get(names_, key_);
    ASSERT_FALSE(got.is_ok());
    // The failure that opened it, word for word: one cause, one warning.
    EXPECT_EQ(got.status().code(), StatusCode::kIoError);
    EXPECT_EQ(got.status().message(), "cannot read: Input/output error");
  }
  EXPECT_EQ(flaky_->gets, 3) << "an open breaker still called the tier";
  EXPECT_EQ(tier_->counters().skipped, 10u);
  EXPECT_EQ(tier_->counters().failures, 3u);
}

TEST_F(GuardedTierTest, AnAnswerBetweenFailuresStartsTheCountAgain) {
  for (int round = 0; round < 5; ++round) {
    flaky_->reads_fail = true;
    EXPECT_TRUE(get_fails());
    EXPECT_TRUE(get_fails());
    flaky_->reads_fail = false;
    EXPECT_FALSE(get_fails());  // a miss is an answer
  }
  EXPECT_EQ(tier_->counters().trips, 0u);
  EXPECT_EQ(flaky_->gets, 15);
  EXPECT_EQ(tier_->counters().misses, 5u);
}

TEST_F(GuardedTierTest, AfterThePauseOneProbeGoesThroughAndASuccessCloses) {
  flaky_->reads_fail = true;
  for (int i = 0; i < 3; ++i) (void)get_fails();
  now_ += milliseconds(99);
  EXPECT_TRUE(get_fails());
  EXPECT_EQ(flaky_->gets, 3);
  now_ += milliseconds(1);
  flaky_->reads_fail = false;
  flaky_->hit = true;
  EXPECT_FALSE(get_fails());  // the probe
  EXPECT_EQ(flaky_->gets, 4);
  EXPECT_FALSE(get_fails());
  EXPECT_EQ(flaky_->gets, 5);
  EXPECT_EQ(tier_->counters().hits, 2u);
}

TEST_F(GuardedTierTest, WhileAProbeIsOutOtherCallsAreStillSkipped) {
  flaky_->reads_fail = true;
  for (int i = 0; i < 3; ++i) (void)get_fails();
  now_ += milliseconds(100);
  // The probe's call comes back into the tier, as another thread would.
  Status during_probe = Status::ok();
  flaky_->during_get = [&] { during_probe = tier_->get(names_, key_).status(); };
  EXPECT_TRUE(get_fails());
  EXPECT_EQ(during_probe.code(), StatusCode::kIoError);
  EXPECT_EQ(flaky_->gets, 4);
}

TEST_F(GuardedTierTest, AFailedProbeDoublesThePauseUpToTheLongest) {
  flaky_->reads_fail = true;
  for (int i = 0; i < 3; ++i) (void)get_fails();
  int reached = flaky_->gets;
  for (const int pause : {100, 200, 350, 350}) {
    now_ += milliseconds(pause - 1);
    (void)get_fails();
    EXPECT_EQ(flaky_->gets, reached) << "probed before " << pause << " ms";
    now_ += milliseconds(1);
    (void)get_fails();
    EXPECT_EQ(flaky_->gets, ++reached) << "no probe after " << pause << " ms";
  }
  EXPECT_EQ(tier_->counters().trips, 5u);
}

TEST_F(GuardedTierTest, AFolderThatCannotBeWrittenStillServesHits) {
  flaky_->writes_fail = true;
  flaky_->hit = true;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(put_fails());
  EXPECT_EQ(flaky_->puts, 3);
  for (int i = 0; i < 5; ++i) {
    auto got = tier_->get(names_, key_);
    ASSERT_TRUE(got.is_ok());
    EXPECT_TRUE(got->has_value());
  }
  EXPECT_EQ(flaky_->gets, 5);
}

TEST_F(GuardedTierTest, AMissingAbilityIsNotAFailure) {
  for (int i = 0; i < 10; ++i) {
    auto lock = tier_->try_lock("db", key_);
    EXPECT_EQ(lock.status().code(), StatusCode::kNotSupported);
  }
  EXPECT_EQ(tier_->counters().trips, 0u);
  EXPECT_EQ(tier_->counters().failures, 0u);
}

}  // namespace
}  // namespace kcache
