// The user tier's limits: least-recently-used eviction across databases,
// age expiry, compaction of dead space, the background pass after a put,
// and a reader that holds a log an eviction replaced.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "fakes/counting_events.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

using testing::CountingEvents;
using testing::FaultEnv;
using testing::TempFolder;

constexpr std::int64_t kStart = 1'800'000'000;  // a Unix time, on the minute

Entry entry_of(int i, std::size_t size = 1000) {
  return testing::small_entry("backend fake\nkernel k" + std::to_string(i) + "\n",
                              std::string(size, static_cast<char>('a' + i % 26)));
}

class UserTierLimitsTest : public ::testing::Test {
 protected:
  UserTierLimitsTest() { env.now = kStart; }
  std::unique_ptr<Tier> tier(userlog::Limits limits = {}) {
    return make_user_tier({dir / "v1", false, false, limits}, env, log, events);
  }
  void put(Tier& t, const std::string& db, const Entry& e) {
    ASSERT_TRUE(t.put(db, e, *encode_entry(e, Compression::kNone)).is_ok());
  }
  // Whether `db` serves `e`, right, from a fresh tier (another process).
  bool stored(const std::string& db, const Entry& e) {
    auto fresh = tier();
    return served(*fresh, db, e);
  }
  static bool served(Tier& t, const std::string& db, const Entry& e) {
    auto got = t.get({db, db}, e.key);
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    return got.is_ok() && got->has_value() &&
           std::equal(e.payload().begin(), e.payload().end(), (*got)->payload().begin(),
                      (*got)->payload().end());
  }
  std::uint64_t folder_bytes() {
    std::uint64_t total = 0;
    for (const auto& file : std::filesystem::directory_iterator(dir / "v1")) {
      const std::string name = file.path().filename().string();
      if (name.ends_with(".ukdb") || name.ends_with(".ukdx") || name.ends_with(".ukdu")) {
        total += file.file_size();
      }
    }
    return total;
  }
  void minutes_pass(int minutes) { *env.now += 60 * minutes; }

  TempFolder dir;
  FaultEnv env;
  Logger log{LogLevel::kQuiet, {}};
  CountingEvents events;
};

TEST_F(UserTierLimitsTest, PastTheSizeTheEntriesUsedLongestAgoGoAcrossDatabases) {
  auto t = tier();
  std::vector<Entry> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back(entry_of(i));
    put(*t, i % 2 == 0 ? "even" : "odd", entries.back());  // put at minutes 0..9
    minutes_pass(1);
  }
  // Entries 0 and 1, put first, are used since: 2 and 3 are now the oldest.
  ASSERT_TRUE(served(*t, "even", entries[0]));
  ASSERT_TRUE(served(*t, "odd", entries[1]));
  const std::uint64_t before = folder_bytes();

  PruneOptions options;
  options.max_size = before - 1;  // just over: down to 90%
  auto report = t->prune(options);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_TRUE(report->ran);
  EXPECT_EQ(report->entries_before, 10u);
  EXPECT_EQ(report->bytes_before, before);
  EXPECT_GE(report->evicted, 1u);
  EXPECT_EQ(report->entries_after, 10u - report->evicted);
  EXPECT_EQ(report->bytes_after, folder_bytes());
  EXPECT_LE(report->bytes_after, *options.max_size / 10 * 9);
  EXPECT_EQ(report->databases_compacted, 2u);
  // The oldest uses went: 2, 3, then 4, ... as far as needed; 0 and 1 stay.
  for (int i = 0; i < 10; ++i) {
    const bool kept = stored(i % 2 == 0 ? "even" : "odd", entries[i]);
    if (i < 2) {
      EXPECT_TRUE(kept) << i;
    } else {
      EXPECT_EQ(kept, i >= 2 + static_cast<int>(report->evicted)) << i;
    }
  }
  EXPECT_EQ(events.count, 0);
}

TEST_F(UserTierLimitsTest, PastTheCountTheLeastRecentlyUsedGoDownToNinetyPercent) {
  auto t = tier();
  std::vector<Entry> entries;
  for (int i = 0; i < 30; ++i) {
    entries.push_back(entry_of(i, 100));
    put(*t, "db", entries.back());
    minutes_pass(1);
  }
  PruneOptions options;
  options.max_entries = 20;
  auto report = t->prune(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->evicted, 12u);  // 30 -> 18, 90% of 20
  EXPECT_EQ(report->entries_after, 18u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(stored("db", entries[i]), i >= 12) << i;
}

TEST_F(UserTierLimitsTest, EntriesUnusedForLongerThanTheAgeLimitExpire) {
  auto t = tier();
  const Entry old = entry_of(0), used = entry_of(1), fresh = entry_of(2);
  put(*t, "db", old);
  put(*t, "db", used);
  minutes_pass(60 * 24 * 10);  // ten days
  ASSERT_TRUE(served(*t, "db", used));
  put(*t, "db", fresh);
  minutes_pass(60 * 24 * 5);
  PruneOptions options;
  options.max_age = std::chrono::hours(24 * 7);
  auto report = t->prune(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->expired, 1u);
  EXPECT_EQ(report->evicted, 0u);
  EXPECT_FALSE(stored("db", old));
  EXPECT_TRUE(stored("db", used));
  EXPECT_TRUE(stored("db", fresh));
}

TEST_F(UserTierLimitsTest, WithinTheLimitsAMostlyDeadLogIsCompactedAndNothingEvicted) {
  auto t = tier();
  const Entry a = entry_of(0, 5000), b = entry_of(1, 5000);
  for (int i = 0; i < 10; ++i) put(*t, "db", a);  // nine dead copies of a
  put(*t, "db", b);
  const auto log_before = std::filesystem::file_size(dir / "v1/db.ukdb");
  auto report = t->prune({});
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->evicted + report->expired, 0u);
  EXPECT_EQ(report->databases_compacted, 1u);
  EXPECT_LT(std::filesystem::file_size(dir / "v1/db.ukdb"), log_before / 4);
  EXPECT_TRUE(stored("db", a));
  EXPECT_TRUE(stored("db", b));
  // Nothing left to reclaim: a second pass compacts nothing.
  auto again = t->prune({});
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->databases_compacted, 0u);
}

TEST_F(UserTierLimitsTest, AReaderHoldingTheOldLogStillReadsAnEvictedEntryRight) {
  auto writer = tier();
  const Entry a = entry_of(0), b = entry_of(1);
  put(*writer, "db", a);
  minutes_pass(1);
  put(*writer, "db", b);
  auto reader = tier();  // another process, with the log open
  ASSERT_TRUE(served(*reader, "db", a));
  // a is evicted (used longest ago) and the log replaced beneath the reader.
  PruneOptions options;
  options.max_entries = 1;
  auto report = writer->prune(options);
  ASSERT_TRUE(report.is_ok());
  ASSERT_EQ(report->evicted, 1u);
  EXPECT_FALSE(stored("db", a));
  // The reader was about to read a: it reads it from the log it holds.
  EXPECT_TRUE(served(*reader, "db", a));
  EXPECT_TRUE(served(*reader, "db", b));
  EXPECT_EQ(events.count, 0);
}

TEST_F(UserTierLimitsTest, UsesSurviveTheTableGrowingAndTheLogBeingCompacted) {
  auto t = tier();
  std::vector<Entry> entries;
  // More entries than the smallest table holds at half load: it is rebuilt.
  for (int i = 0; i < 300; ++i) {
    entries.push_back(entry_of(i, 16));
    put(*t, "db", entries.back());
  }
  minutes_pass(10);
  ASSERT_TRUE(served(*t, "db", entries[0]));  // the one used since
  EXPECT_GT(std::filesystem::file_size(dir / "v1/db.ukdu"),
            16u * 256);  // grown past the smallest table
  PruneOptions options;
  options.max_entries = 299;
  auto report = t->prune(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(stored("db", entries[0]));
  // And once more, after the compaction carried the minutes over.
  minutes_pass(10);
  auto again = tier();
  ASSERT_TRUE(served(*again, "db", entries[299]));
  options.max_entries = 10;
  auto second = again->prune(options);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->entries_after, 9u);
  EXPECT_TRUE(stored("db", entries[0]));
  EXPECT_TRUE(stored("db", entries[299]));
  EXPECT_FALSE(stored("db", entries[31]));  // the first written of those never used
}

// A process writes an entry's use into the table once a minute at most:
// hits within the minute skip the table, and the next minute's hit still
// moves it on.
TEST_F(UserTierLimitsTest, RepeatedHitsInOneProcessMoveTheUseOnEachMinute) {
  auto t = tier();
  const Entry e = entry_of(0);
  put(*t, "db", e);
  const auto last_used = [&] {
    auto listed = tier()->list("db");  // as another process sees it
    EXPECT_TRUE(listed.is_ok());
    return listed.is_ok() && listed->size() == 1 ? (*listed)[0].last_used_unix : -1;
  };
  minutes_pass(3);
  ASSERT_TRUE(served(*t, "db", e));
  ASSERT_TRUE(served(*t, "db", e));
  EXPECT_EQ(last_used(), kStart + 3 * 60);
  minutes_pass(4);
  ASSERT_TRUE(served(*t, "db", e));
  EXPECT_EQ(last_used(), kStart + 7 * 60);
  // A newer record of the key starts afresh, and its use is recorded too.
  put(*t, "db", e);
  minutes_pass(1);
  ASSERT_TRUE(served(*t, "db", e));
  EXPECT_EQ(last_used(), kStart + 8 * 60);
}

TEST_F(UserTierLimitsTest, APutPastTheLimitEvictsInTheBackground) {
  constexpr std::uint64_t kLimit = 64 * 1024;
  std::vector<Entry> entries;
  {
    auto t = tier({kLimit, 0, 0});
    for (int i = 0; i < 200; ++i) {
      entries.push_back(entry_of(i, 2000));
      put(*t, i % 3 == 0 ? "a" : "b", entries.back());
    }
  }  // the tier waits for its pass
  EXPECT_LE(folder_bytes(), kLimit);
  int kept = 0;
  std::string which;
  for (int i = 0; i < 200; ++i) {
    if (stored(i % 3 == 0 ? "a" : "b", entries[i])) {
      ++kept;
      which += " " + std::to_string(i);
    }
  }
  EXPECT_GT(kept, 10);
  EXPECT_TRUE(stored(199 % 3 == 0 ? "a" : "b", entries[199]))
      << kept << " kept:" << which;  // the newest
  // No temporary file is left behind.
  for (const auto& file : std::filesystem::directory_iterator(dir / "v1")) {
    EXPECT_EQ(file.path().filename().string().find(".tmp."), std::string::npos) << file.path();
  }
  EXPECT_EQ(events.count, 0);
}

TEST_F(UserTierLimitsTest, PruningAnEmptyOrMissingCacheDoesNothing) {
  auto t = tier();
  auto report = t->prune({});
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->entries_before, 0u);
  EXPECT_EQ(report->bytes_after, 0u);
  EXPECT_FALSE(std::filesystem::exists(dir / "v1"));  // not made by a prune
}

TEST_F(UserTierLimitsTest, ADamagedUseTableCostsOrderNotEntries) {
  auto t = tier();
  const Entry a = entry_of(0), b = entry_of(1);
  put(*t, "db", a);
  put(*t, "db", b);
  testing::overwrite(dir / "v1/db.ukdu", 0, "garbage!");
  auto fresh = tier();
  EXPECT_TRUE(served(*fresh, "db", a));
  put(*fresh, "db", entry_of(2));  // the writer makes a new table
  auto report = fresh->prune({});
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(stored("db", a));
  EXPECT_TRUE(stored("db", b));
  EXPECT_EQ(events.count, 0);
}

}  // namespace
}  // namespace kcache
