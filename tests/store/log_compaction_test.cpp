#include "store/user/log_compaction.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "base/hash.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"
#include "store/user/user_db.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

using testing::TempFolder;

class NoEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string& where, const Status& problem) override {
    ADD_FAILURE() << where << ": " << problem.message();
  }
};

Entry entry_named(const std::string& name) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  const std::string binary = "binary of " + name;  // not a multiple of 8: padded
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(binary.data()), binary.size()});
  entry.payload_size = binary.size();
  return entry;
}

class LogCompactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tier = make_user_tier({dir_.path(), false}, Env::posix(), log_, events_);
    for (const Entry* e : {&a_, &b_, &c_}) {
      ASSERT_TRUE(tier->put("db", *e, *encode_entry(*e, Compression::kNone)).is_ok());
    }
    ASSERT_TRUE(tier->remove("db", c_.key).is_ok());
    ASSERT_TRUE(tier->put("db", a_, *encode_entry(a_, Compression::kNone)).is_ok());  // replaced
  }
  std::string log_path() const { return dir_ / "db.ukdb"; }

  TempFolder dir_;
  Logger log_{LogLevel::kError, nullptr};
  NoEvents events_;
  Entry a_ = entry_named("a"), b_ = entry_named("b"), c_ = entry_named("c");
};

TEST_F(LogCompactionTest, KeepsOnlyTheRecordsGivenAndGivesTheRestBack) {
  const auto before = std::filesystem::file_size(log_path());
  auto log = Env::posix().open_random_access(log_path());
  ASSERT_TRUE(log.is_ok());
  auto scan = userlog::scan_log(**log);
  ASSERT_TRUE(scan.is_ok());
  ASSERT_EQ(scan->live.size(), 2u);  // a (its newest) and b; c removed
  // Keep a alone: b is dropped, as eviction would drop it.
  auto compacted = write_compacted_log(Env::posix(), **log, {scan->live.at(a_.key)}, log_path(),
                                       {dir_.path(), false});
  ASSERT_TRUE(compacted.is_ok()) << compacted.status().message();
  ASSERT_EQ(compacted->records.size(), 1u);
  EXPECT_EQ(compacted->records[0].offset, userlog::kHeaderSize);
  EXPECT_EQ(compacted->end, std::filesystem::file_size(log_path()));
  EXPECT_LT(std::filesystem::file_size(log_path()), before);

  auto fresh = Env::posix().open_random_access(log_path());
  ASSERT_TRUE(fresh.is_ok());
  auto rescan = userlog::scan_log(**fresh);
  ASSERT_TRUE(rescan.is_ok());
  EXPECT_TRUE(rescan->damaged.empty());
  EXPECT_FALSE(rescan->torn_tail);
  ASSERT_EQ(rescan->live.size(), 1u);
  EXPECT_TRUE(rescan->live.contains(a_.key));
  // A tier opened now (its hint names the old log: rebuilt) serves a only.
  auto tier = make_user_tier({dir_.path(), false}, Env::posix(), log_, events_);
  auto got = tier->get({"db", "db"}, a_.key);
  ASSERT_TRUE(got.is_ok() && got->has_value());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*got)->payload().data()),
                        (*got)->payload().size()),
            "binary of a");
  EXPECT_FALSE(tier->get({"db", "db"}, b_.key)->has_value());
}

TEST_F(LogCompactionTest, AFailedRenameLeavesTheLogAsItWasAndNoTemporaryFile) {
  const std::string bytes_before = testing::read_file(log_path());
  testing::FaultEnv env;
  env.inject(testing::FaultOp::kRename, ".tmp.compact.", ENOSPC);
  auto log = env.open_random_access(log_path());
  ASSERT_TRUE(log.is_ok());
  auto scan = userlog::scan_log(**log);
  ASSERT_TRUE(scan.is_ok());
  std::vector<userlog::HintRecord> all;
  for (const auto& [key, record] : scan->live) all.push_back(record);
  auto compacted = write_compacted_log(env, **log, all, log_path(), {dir_.path(), false});
  EXPECT_FALSE(compacted.is_ok());
  EXPECT_EQ(testing::read_file(log_path()), bytes_before);
  for (const auto& file : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(file.path().string().find(".tmp.compact."), std::string::npos) << file.path();
  }
}

}  // namespace
}  // namespace kcache
