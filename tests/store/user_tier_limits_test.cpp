// The user tier's limits: least-recently-used eviction across databases,
// age expiry, compaction of dead space, the background pass after a put,
// and a reader that holds a log an eviction replaced.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "fakes/counting_events.h"
#include "fakes/fault_env.h"
#include "fakes/file_wrapper.h"
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

// What a compaction killed before its rename leaves: a temporary file as
// large as a log, named as the pass names it.
std::string leave_killed_compaction(const std::string& log) {
  const std::string temp = log + ".tmp.compact.4242.0";
  testing::write_file(temp, std::string(64 * 1024, 'x'));
  return temp;
}

TEST_F(UserTierLimitsTest, APruneWithNothingToEvictRemovesWhatAKilledCompactionLeft) {
  put(*tier(), "db", entry_of(0));
  const std::string left = leave_killed_compaction(dir / "v1/db.ukdb");
  auto report = tier()->prune({});
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->evicted + report->expired, 0u);
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(stored("db", entry_of(0)));
}

TEST_F(UserTierLimitsTest, TheFirstPutOfAProcessRemovesWhatAKilledCompactionLeft) {
  put(*tier(), "db", entry_of(0));
  const std::string left = leave_killed_compaction(dir / "v1/db.ukdb");
  auto t = tier();
  // A miss first opens the database for reading, as a compile's lookup does.
  auto missed = t->get({"db", "db"}, entry_of(1).key);
  ASSERT_TRUE(missed.is_ok() && !missed->has_value());
  put(*t, "db", entry_of(1));
  EXPECT_FALSE(std::filesystem::exists(left));
}

TEST_F(UserTierLimitsTest, ACompactionStillWritingItsTemporaryFileKeepsIt) {
  put(*tier(), "db", entry_of(0));
  const std::string writing = leave_killed_compaction(dir / "v1/db.ukdb");
  // Its writer holds the file's lock, as a live pass does.
  auto held = Env::posix().try_lock(writing, 0, 0600);
  ASSERT_TRUE(held.is_ok() && *held != nullptr);
  ASSERT_TRUE(tier()->prune({}).is_ok());
  put(*tier(), "db", entry_of(1));
  EXPECT_TRUE(std::filesystem::exists(writing));
  held->reset();
  ASSERT_TRUE(tier()->prune({}).is_ok());
  EXPECT_FALSE(std::filesystem::exists(writing));
}

TEST_F(UserTierLimitsTest, APassWhoseCompactionFailsCountsNoEviction) {
  auto t = tier();
  std::vector<Entry> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back(entry_of(i, 100));
    put(*t, "db", entries.back());
    minutes_pass(1);
  }
  env.inject(testing::FaultOp::kRename, ".tmp.compact.", EIO);  // killed before its rename
  PruneOptions options;
  options.max_entries = 5;
  EXPECT_FALSE(t->prune(options).is_ok());
  EXPECT_EQ(events.evicted + events.expired, 0u);
  env.clear_faults();
  for (const Entry& e : entries) EXPECT_TRUE(stored("db", e));
  auto report = t->prune(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->evicted, 5u);  // 10 -> 5 (90% of 5, rounded up)
  EXPECT_EQ(events.evicted, 5u);
}

// Logs whose reads of a record's bytes stop, once armed, until they are
// let go: a pass stopped (SIGSTOP) or slowed (a slow disk) while it copies
// what it keeps.
class PausingEnv final : public EnvWrapper {
 public:
  explicit PausingEnv(Env& target) : EnvWrapper(target) {}
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    return wrap(path, EnvWrapper::open_random_access(path));
  }
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    return wrap(path, EnvWrapper::open_file(path, mode, create_mode));
  }
  void arm() {
    std::lock_guard lock(mutex_);
    armed_ = true;
  }
  bool wait_until_paused() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] { return paused_; });
  }
  void let_go() {
    std::lock_guard lock(mutex_);
    armed_ = false;
    changed_.notify_all();
  }

 private:
  class Pausing final : public testing::FileWrapper {
   public:
    Pausing(std::unique_ptr<File> file, const PausingEnv& env)
        : FileWrapper(std::move(file)), env_(env) {}
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      if (out.size() >= 512) env_.pause_if_armed();
      return FileWrapper::read_at(offset, out);
    }

   private:
    const PausingEnv& env_;
  };
  // Logs alone: their records are what a pass copies.
  Result<std::unique_ptr<File>> wrap(const std::string& path,
                                     Result<std::unique_ptr<File>> file) const {
    if (!file || !path.ends_with(".ukdb")) return file;
    return std::unique_ptr<File>(std::make_unique<Pausing>(std::move(*file), *this));
  }
  void pause_if_armed() const {
    std::unique_lock lock(mutex_);
    if (!armed_) return;
    paused_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !armed_; });
  }
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool armed_ = false;
  mutable bool paused_ = false;
};

TEST_F(UserTierLimitsTest, APassStoppedWhileItCopiesHoldsUpNoWriter) {
  std::vector<Entry> entries;
  {
    auto t = tier();
    for (int i = 0; i < 10; ++i) {
      entries.push_back(entry_of(i, 2000));
      put(*t, "db", entries.back());
      minutes_pass(1);
    }
  }
  PausingEnv pausing(env);
  auto pass_tier = make_user_tier({dir / "v1", false, false, {}}, pausing, log, events);
  pausing.arm();
  Result<PruneReport> report = Status::internal("not run");
  std::thread pass([&] {
    PruneOptions options;
    options.max_entries = 5;
    report = pass_tier->prune(options);
  });
  ASSERT_TRUE(pausing.wait_until_paused());
  // Another process stores a kernel meanwhile: stored at once, not after
  // the append lock's wait, and kept by the pass that goes on later.
  const Entry during = entry_of(20, 2000);
  const auto began = std::chrono::steady_clock::now();
  auto writer = tier();
  const Status stored_during = writer->put("db", during, *encode_entry(during, Compression::kNone));
  const auto took = std::chrono::steady_clock::now() - began;
  pausing.let_go();
  pass.join();
  ASSERT_TRUE(stored_during.is_ok()) << stored_during.to_string();
  EXPECT_LT(took, std::chrono::seconds(5));
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(report->evicted, 5u);  // 10 -> 5 of those it saw
  EXPECT_TRUE(stored("db", during));
  EXPECT_TRUE(served(*writer, "db", during));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(stored("db", entries[i]), i >= 5) << i;
  EXPECT_EQ(events.count, 0);
}

TEST_F(UserTierLimitsTest, ARemovalWrittenWhileAPassCopiesIsKept) {
  std::vector<Entry> entries;
  auto writer = tier();
  for (int i = 0; i < 4; ++i) {
    entries.push_back(entry_of(i, 2000));
    put(*writer, "db", entries.back());
  }
  // Dead copies of the first: most of the log is dead, so a pass compacts
  // it with nothing to evict.
  for (int i = 0; i < 4; ++i) put(*writer, "db", entries[0]);
  PausingEnv pausing(env);
  auto pass_tier = make_user_tier({dir / "v1", false, false, {}}, pausing, log, events);
  pausing.arm();
  Result<PruneReport> report = Status::internal("not run");
  std::thread pass([&] { report = pass_tier->prune({}); });
  ASSERT_TRUE(pausing.wait_until_paused());
  // Removed after the pass looked: the new log must not bring it back.
  ASSERT_TRUE(writer->remove("db", entries[1].key).is_ok());
  pausing.let_go();
  pass.join();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(report->databases_compacted, 1u);
  EXPECT_FALSE(stored("db", entries[1]));
  EXPECT_TRUE(stored("db", entries[0]));
  EXPECT_TRUE(stored("db", entries[2]));
  EXPECT_TRUE(stored("db", entries[3]));
  EXPECT_LT(std::filesystem::file_size(dir / "v1/db.ukdb"), 4u * 2000 + 4096);
}

}  // namespace
}  // namespace kcache
