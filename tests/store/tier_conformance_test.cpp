// One suite, run against every tier: what any tier must do, whatever it
// stores entries in.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/hash.h"
#include "base/log.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"
#include "format/kdb_file.h"
#include "store/guarded_tier.h"
#include "store/memory/memory_tier.h"
#include "store/system/system_tier.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

using testing::TempFolder;

class RecordingEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string& where, const Status&) override {
    std::lock_guard lock(mutex);
    corrupt.push_back(where);
  }
  std::mutex mutex;
  std::vector<std::string> corrupt;
};

Entry make_entry(int id, std::size_t size) {
  Entry entry;
  entry.material = "kcache.key 1\nid " + std::to_string(id) + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.created_unix = 1700000000 + id;
  entry.metadata = {{"format", "test"}, {"id", std::to_string(id)}};
  std::vector<std::uint8_t> payload(size);
  for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<std::uint8_t>(i * 31 + id);
  entry.storage = ByteBuffer::copy_of(payload);
  entry.payload_size = size;
  return entry;
}

// A clock that tests move (a minute at a time: the user tier records uses
// by the minute); read by the tiers' threads too.
class ClockEnv final : public EnvWrapper {
 public:
  ClockEnv() : EnvWrapper(Env::posix()) {}
  std::int64_t now_unix() const override { return now.load(); }
  std::atomic<std::int64_t> now{1'800'000'000};
};

// How each tier is made, filled and damaged.
class TierHarness {
 public:
  virtual ~TierHarness() = default;
  virtual Tier& tier() = 0;
  virtual void seed(const std::string& db, const std::vector<Entry>& entries) = 0;
  // Whether the tier takes put and remove (the others answer kNotSupported).
  virtual bool writable() const { return true; }
  // The tier made anew, bounded to `bytes` (nullptr: it has no bound).
  virtual Tier* bounded(std::uint64_t /*bytes*/) { return nullptr; }
  // What the bounded tier does to stay within its bound once filled past
  // it (nothing, for a tier that evicts as it stores).
  virtual void make_room() {}
  // Time passing, as far as the tier tells uses apart.
  virtual void time_passes() {}
  // Damages the stored bytes of `key`; false when the tier has none.
  virtual bool corrupt(const std::string& /*db*/, const CacheKey& /*key*/) { return false; }
  virtual bool separates_databases() const { return true; }
  RecordingEvents events;
  Logger log{LogLevel::kQuiet, {}};
  TempFolder dir;
};

class MemoryHarness : public TierHarness {
 public:
  MemoryHarness() : tier_(make_memory_tier(64u << 20)) {}
  Tier& tier() override { return *tier_; }
  Tier* bounded(std::uint64_t bytes) override {
    tier_ = make_memory_tier(bytes);
    return tier_.get();
  }
  void seed(const std::string& db, const std::vector<Entry>& entries) override {
    for (const auto& e : entries) ASSERT_TRUE(tier_->put(db, e, {}).is_ok());
  }
  // The key already names the target; the memory tier needs no databases.
  bool separates_databases() const override { return false; }

 private:
  std::unique_ptr<Tier> tier_;
};

class UserHarness : public TierHarness {
 public:
  // `guarded`: wrapped as the cache holds it (store/guarded_tier.h).
  explicit UserHarness(bool guarded = false) : guarded_(guarded) { make({}); }
  Tier& tier() override { return *tier_; }
  Tier* bounded(std::uint64_t bytes) override {
    make({bytes, 0, 0});
    return tier_.get();
  }
  // The background pass a put started may still run: prune waits for it.
  void make_room() override { ASSERT_TRUE(tier_->prune({}).is_ok()); }
  void time_passes() override { clock_.now += 60; }
  void seed(const std::string& db, const std::vector<Entry>& entries) override {
    for (const auto& e : entries) {
      auto bytes = encode_entry(e, Compression::kNone);
      ASSERT_TRUE(tier_->put(db, e, *bytes).is_ok());
    }
  }
  bool corrupt(const std::string& db, const CacheKey& key) override {
    const std::string log_path = dir / "user/" + db + ".ukdb";
    auto record = testing::newest_record(log_path, key);
    if (!record) return false;
    std::fstream file(log_path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(record->offset + 100));
    file.put('\x7f');
    return file.good();
  }

 private:
  void make(userlog::Limits limits) {
    tier_.reset();
    tier_ = make_user_tier({dir / "user", true, false, limits}, clock_, log, events);
    if (guarded_) tier_ = std::make_unique<GuardedTier>(std::move(tier_));
  }
  const bool guarded_;
  ClockEnv clock_;
  std::unique_ptr<Tier> tier_;
};

class SystemHarness : public TierHarness {
 public:
  explicit SystemHarness(bool guarded = false) : guarded_(guarded) {
    std::filesystem::create_directories(dir / "system");
    reopen();
  }
  Tier& tier() override { return *tier_; }
  void seed(const std::string& db, const std::vector<Entry>& entries) override {
    std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
    for (const auto& e : entries) encoded.emplace_back(e.key, *encode_entry(e, Compression::kNone));
    ASSERT_TRUE(write_kdb(Env::posix(), dir / "system/" + db + ".kdb", encoded, {}).is_ok());
    reopen();  // packages are opened once per process; a new tier sees the new file
  }
  bool writable() const override { return false; }
  bool corrupt(const std::string& db, const CacheKey& key) override {
    auto reader = KdbReader::open(dir / "system/" + db + ".kdb", Env::posix());
    auto slot = (*reader)->find(key);
    std::fstream file(dir / "system/" + db + ".kdb",
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(slot->offset + slot->size - 1));
    file.put('\x01');
    reopen();
    return file.good();
  }

 private:
  void reopen() {
    tier_ = make_system_tier(dir / "system", {}, Env::posix(), log, events);
    if (guarded_) tier_ = std::make_unique<GuardedTier>(std::move(tier_));
  }
  const bool guarded_;
  std::unique_ptr<Tier> tier_;
};

struct TierParam {
  const char* name;
  std::function<std::unique_ptr<TierHarness>()> make;
  friend void PrintTo(const TierParam& param, std::ostream* out) { *out << param.name; }
};

class TierConformanceTest : public ::testing::TestWithParam<TierParam> {
 protected:
  void SetUp() override { harness_ = GetParam().make(); }
  Tier& tier() { return harness_->tier(); }
  std::unique_ptr<TierHarness> harness_;
  const DbNames db_{"arch_4", "arch"};
};

TEST_P(TierConformanceTest, EmptyTierMisses) {
  auto got = tier().get(db_, make_entry(1, 10).key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_FALSE(got->has_value());
}

TEST_P(TierConformanceTest, HitReturnsTheStoredEntry) {
  Entry entry = make_entry(7, 4096);
  harness_->seed(db_.exact, {entry});
  auto got = tier().get(db_, entry.key);
  ASSERT_TRUE(got.is_ok());
  ASSERT_TRUE(got->has_value());
  const Entry& hit = **got;
  EXPECT_EQ(hit.key, entry.key);
  EXPECT_EQ(hit.material, entry.material);
  EXPECT_EQ(hit.metadata, entry.metadata);
  EXPECT_EQ(hit.created_unix, entry.created_unix);
  ASSERT_EQ(hit.payload().size(), 4096u);
  EXPECT_TRUE(std::equal(hit.payload().begin(), hit.payload().end(), entry.payload().begin()));
}

TEST_P(TierConformanceTest, ManyEntriesOfManySizes) {
  std::vector<Entry> entries;
  for (int i = 0; i < 40; ++i) entries.push_back(make_entry(i, i == 39 ? (1u << 20) : i * 97));
  harness_->seed(db_.exact, entries);
  for (const auto& entry : entries) {
    auto got = tier().get(db_, entry.key);
    ASSERT_TRUE(got.is_ok() && got->has_value()) << "entry " << entry.material;
    EXPECT_TRUE(std::equal((*got)->payload().begin(), (*got)->payload().end(),
                           entry.payload().begin(), entry.payload().end()));
  }
  auto absent = tier().get(db_, make_entry(1000, 1).key);
  ASSERT_TRUE(absent.is_ok());
  EXPECT_FALSE(absent->has_value());
}

TEST_P(TierConformanceTest, OtherDatabaseMisses) {
  if (!harness_->separates_databases()) GTEST_SKIP() << "this tier has no databases";
  Entry entry = make_entry(3, 100);
  harness_->seed("other_4", {entry});
  auto got = tier().get(db_, entry.key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
}

TEST_P(TierConformanceTest, CorruptEntryIsAMissAndIsReported) {
  Entry entry = make_entry(5, 1000);
  harness_->seed(db_.exact, {entry});
  if (!harness_->corrupt(db_.exact, entry.key)) GTEST_SKIP() << "this tier stores no bytes";
  auto got = tier().get(db_, entry.key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(harness_->events.corrupt.size(), 1u);
}

TEST_P(TierConformanceTest, ConcurrentReadersGetTheirOwnEntries) {
  std::vector<Entry> entries;
  for (int i = 0; i < 16; ++i) entries.push_back(make_entry(i, 2000 + i));
  harness_->seed(db_.exact, entries);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const Entry& entry = entries[(t * 7 + round) % entries.size()];
        auto got = tier().get(db_, entry.key);
        if (!got.is_ok() || !got->has_value() || (*got)->material != entry.material ||
            (*got)->payload().size() != entry.payload_size) {
          ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(TierConformanceTest, APutIsServedAndARemovalHidesIt) {
  const Entry entry = make_entry(11, 3000), other = make_entry(12, 10);
  const auto encoded = encode_entry(entry, Compression::kNone);
  Status put = tier().put(db_.exact, entry, *encoded);
  if (!harness_->writable()) {
    EXPECT_EQ(put.code(), StatusCode::kNotSupported) << put.to_string();
    EXPECT_EQ(tier().remove(db_.exact, entry.key).code(), StatusCode::kNotSupported);
    return;
  }
  ASSERT_TRUE(put.is_ok()) << put.to_string();
  auto got = tier().get(db_, entry.key);
  ASSERT_TRUE(got.is_ok() && got->has_value());
  EXPECT_TRUE(std::equal((*got)->payload().begin(), (*got)->payload().end(),
                         entry.payload().begin(), entry.payload().end()));
  EXPECT_TRUE(tier().remove(db_.exact, other.key).is_ok());  // absent: ok
  ASSERT_TRUE(tier().remove(db_.exact, entry.key).is_ok());
  auto gone = tier().get(db_, entry.key);
  ASSERT_TRUE(gone.is_ok());
  EXPECT_FALSE(gone->has_value());
  // Stored again after its removal, it is served again.
  ASSERT_TRUE(tier().put(db_.exact, entry, *encoded).is_ok());
  auto again = tier().get(db_, entry.key);
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->has_value());
}

// A bounded tier filled well past its bound keeps the entries used last
// (here the first one, used after every put, and the newest), not those
// used longest ago, and keeps no more than its bound holds.
TEST_P(TierConformanceTest, ABoundedTierKeepsWhatWasUsedLast) {
  constexpr std::uint64_t kBound = 128 * 1024;
  constexpr std::size_t kSize = 8 * 1024;
  Tier* bounded = harness_->bounded(kBound);
  if (bounded == nullptr) {
    // A tier with no bound stores nothing (the system tier is read-only).
    EXPECT_FALSE(harness_->writable());
    return;
  }
  std::vector<Entry> entries;
  for (int i = 0; i < 60; ++i) {
    entries.push_back(make_entry(100 + i, kSize));
    ASSERT_TRUE(
        bounded->put(db_.exact, entries.back(), *encode_entry(entries.back(), Compression::kNone))
            .is_ok());
    harness_->time_passes();
    auto first = bounded->get(db_, entries[0].key);
    ASSERT_TRUE(first.is_ok() && first->has_value()) << "after put " << i;
    harness_->time_passes();
  }
  harness_->make_room();
  int kept = 0;
  for (const Entry& entry : entries) {
    auto got = bounded->get(db_, entry.key);
    ASSERT_TRUE(got.is_ok());
    kept += got->has_value() ? 1 : 0;
  }
  EXPECT_LE(static_cast<std::uint64_t>(kept) * kSize, kBound);
  EXPECT_GT(kept, 2);
  auto first = bounded->get(db_, entries.front().key);
  auto newest = bounded->get(db_, entries.back().key);
  auto oldest_unused = bounded->get(db_, entries[1].key);
  ASSERT_TRUE(first.is_ok() && newest.is_ok() && oldest_unused.is_ok());
  EXPECT_TRUE(first->has_value());
  EXPECT_TRUE(newest->has_value());
  EXPECT_FALSE(oldest_unused->has_value());
}

INSTANTIATE_TEST_SUITE_P(
    AllTiers, TierConformanceTest,
    ::testing::Values(TierParam{"memory", [] { return std::make_unique<MemoryHarness>(); }},
                      TierParam{"user", [] { return std::make_unique<UserHarness>(); }},
                      TierParam{"system", [] { return std::make_unique<SystemHarness>(); }},
                      TierParam{"guarded_user", [] { return std::make_unique<UserHarness>(true); }},
                      TierParam{"guarded_system",
                                [] { return std::make_unique<SystemHarness>(true); }}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

}  // namespace
}  // namespace kcache
