// The user tier never follows a symbolic link in its folder (issue 12,
// item 7): a log, hint, lock file or quarantine/ that is a link is moved
// aside, never read, written or created through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fakes/counting_events.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using testing::CountingEvents;
using testing::TempFolder;

class UserTierLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "outside");
  }
  std::unique_ptr<Tier> tier(const std::string& folder) {
    return make_user_tier({dir_ / folder, false}, Env::posix(), log_, events_);
  }
  static void put(Tier& tier, const Entry& entry) {
    ASSERT_TRUE(tier.put("db", entry, *encode_entry(entry, Compression::kNone)).is_ok());
  }
  bool served(Tier& tier, const Entry& entry) {
    auto got = tier.get({"db", "db"}, entry.key);
    EXPECT_TRUE(got.is_ok()) << got.status().message();
    return got.is_ok() && got->has_value();
  }
  bool is_link(const std::string& name) const { return fs::is_symlink(dir_ / ("cache/" + name)); }

  TempFolder dir_;
  Logger log_{LogLevel::kError, nullptr};
  CountingEvents events_;
  const Entry theirs_ = testing::small_entry("theirs", "another user's binary");
  const Entry ours_ = testing::small_entry("ours", "our binary");
};

TEST_F(UserTierLinksTest, ALogThatIsALinkIsNeverServedAndIsMovedAside) {
  put(*tier("outside"), theirs_);
  const std::string their_log = testing::read_file(dir_ / "outside/db.ukdb");
  fs::create_symlink(dir_ / "outside/db.ukdb", dir_ / "cache/db.ukdb");
  fs::create_symlink(dir_ / "outside/db.ukdx", dir_ / "cache/db.ukdx");
  auto ours = tier("cache");
  EXPECT_FALSE(served(*ours, theirs_));
  EXPECT_GE(events_.count, 1);
  put(*ours, ours_);
  EXPECT_TRUE(served(*ours, ours_));
  EXPECT_FALSE(served(*ours, theirs_));
  EXPECT_FALSE(is_link("db.ukdb"));
  EXPECT_FALSE(is_link("db.ukdx"));
  EXPECT_EQ(testing::read_file(dir_ / "outside/db.ukdb"), their_log) << "written through a link";
  // A fresh process sees only its own entry too.
  auto again = tier("cache");
  EXPECT_TRUE(served(*again, ours_));
  EXPECT_FALSE(served(*again, theirs_));
}

TEST_F(UserTierLinksTest, AHintThatIsALinkIsNeitherReadNorWrittenThrough) {
  put(*tier("cache"), ours_);
  testing::write_file(dir_ / "outside/victim", "precious");
  fs::remove(dir_ / "cache/db.ukdx");
  fs::create_symlink(dir_ / "outside/victim", dir_ / "cache/db.ukdx");
  auto ours = tier("cache");
  EXPECT_TRUE(served(*ours, ours_));
  put(*ours, theirs_);
  EXPECT_TRUE(served(*ours, theirs_));
  EXPECT_EQ(testing::read_file(dir_ / "outside/victim"), "precious");
  EXPECT_FALSE(is_link("db.ukdx"));
}

TEST_F(UserTierLinksTest, ALockFileThatIsALinkIsNotOpenedNorCreatedThrough) {
  fs::create_symlink(dir_ / "outside/made-through-the-link", dir_ / "cache/db.locks");
  auto ours = tier("cache");
  put(*ours, ours_);
  auto lock = ours->try_lock("db", ours_.key);
  ASSERT_TRUE(lock.is_ok()) << lock.status().message();
  EXPECT_NE(*lock, nullptr);
  EXPECT_FALSE(fs::exists(dir_ / "outside/made-through-the-link"));
  EXPECT_FALSE(is_link("db.locks"));
  EXPECT_TRUE(served(*ours, ours_));
}

TEST_F(UserTierLinksTest, AQuarantineThatIsALinkIsNotWrittenThrough) {
  put(*tier("cache"), ours_);
  fs::create_symlink(dir_ / "outside", dir_ / "cache/quarantine");
  // Damage the entry: a lookup copies its bytes to quarantine/.
  auto record = testing::newest_record(dir_ / "cache/db.ukdb", ours_.key);
  ASSERT_TRUE(record);
  {
    std::fstream log(dir_ / "cache/db.ukdb", std::ios::in | std::ios::out | std::ios::binary);
    log.seekp(static_cast<std::streamoff>(record->offset + record->size - 1));
    log.put('\x55');
  }
  auto ours = tier("cache");
  EXPECT_FALSE(served(*ours, ours_));
  EXPECT_EQ(events_.count, 1);
  EXPECT_TRUE(fs::is_empty(dir_ / "outside")) << "bad bytes went through the link";
  EXPECT_FALSE(is_link("quarantine"));
  ASSERT_TRUE(fs::is_directory(dir_ / "cache/quarantine"));
  EXPECT_FALSE(fs::is_empty(dir_ / "cache/quarantine"));
}

}  // namespace
}  // namespace kcache
