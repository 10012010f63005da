// One suite, run against every tier: what any tier must do, whatever it
// stores entries in.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"
#include "format/hash.h"
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

// How each tier is made, filled and damaged.
class TierHarness {
 public:
  virtual ~TierHarness() = default;
  virtual Tier& tier() = 0;
  virtual void seed(const std::string& db, const std::vector<Entry>& entries) = 0;
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
  explicit UserHarness(bool guarded = false)
      : tier_(make_user_tier({dir / "user", true}, Env::posix(), log, events)) {
    if (guarded) tier_ = std::make_unique<GuardedTier>(std::move(tier_));
  }
  Tier& tier() override { return *tier_; }
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
