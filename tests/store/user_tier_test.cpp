#include "store/user/user_tier.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "fakes/temp_folder.h"
#include "format/hash.h"

namespace kcache {
namespace {

using testing::TempFolder;

class CountingEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string&, const Status&) override { ++count; }
  int count = 0;
};

Entry entry_named(const std::string& name) {
  Entry entry;
  entry.material = "backend fake\nkernel " + name + "\n";
  entry.key = CacheKey(sha256(entry.material));
  entry.created_unix = 1700000000;
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(name.data()), name.size()});
  entry.payload_size = name.size();
  return entry;
}

class UserTierTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tier> tier() {
    return make_user_tier({dir / "v1", true}, Env::posix(), log, events);
  }
  void put(Tier& t, const std::string& db, const Entry& e) {
    ASSERT_TRUE(t.put(db, e, *encode_entry(e, Compression::kNone)).is_ok());
  }
  std::string entry_file(const std::string& db, const CacheKey& key) {
    return dir / "v1/" + db + ".entries/" + key.hex().substr(0, 2) + "/" + key.hex();
  }
  TempFolder dir;
  Logger log{LogLevel::kQuiet, {}};
  CountingEvents events;
};

TEST_F(UserTierTest, LayoutAndPrivateFolders) {
  auto t = tier();
  EXPECT_FALSE(std::filesystem::exists(dir / "v1"));  // nothing until the first write
  Entry e = entry_named("k");
  put(*t, "gfx906_60", e);
  EXPECT_TRUE(std::filesystem::exists(dir / "v1/gfx906_60.ukdb"));
  EXPECT_TRUE(std::filesystem::exists(entry_file("gfx906_60", e.key)));
  for (const std::string& folder : {dir / "v1", dir / "v1/gfx906_60.entries"}) {
    struct stat st;
    ASSERT_EQ(::stat(folder.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << folder;
  }
  auto listed = t->list("gfx906_60");
  ASSERT_TRUE(listed.is_ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].backend, "fake");
  EXPECT_EQ((*listed)[0].kernels, "k");
  EXPECT_EQ(*t->databases(), std::vector<std::string>{"gfx906_60"});
}

TEST_F(UserTierTest, CorruptEntryIsQuarantinedNotDeleted) {
  auto t = tier();
  Entry e = entry_named("bad");
  put(*t, "db", e);
  {
    std::fstream file(entry_file("db", e.key), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('!');
  }
  auto got = t->get({"db", "db"}, e.key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(events.count, 1);
  EXPECT_FALSE(std::filesystem::exists(entry_file("db", e.key)));
  int quarantined = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir / "v1/quarantine")) {
    EXPECT_NE(f.path().filename().string().find(e.key.hex()), std::string::npos);
    ++quarantined;
  }
  EXPECT_EQ(quarantined, 1);
  EXPECT_TRUE(t->list("db")->empty());  // the index row went with it
}

TEST_F(UserTierTest, GarbageIndexIsQuarantinedAndRebuilt) {
  testing::write_file(dir / "v1/db.ukdb", std::string(5000, 'x'));
  auto t = tier();
  Entry e = entry_named("fresh");
  put(*t, "db", e);
  EXPECT_EQ(t->list("db")->size(), 1u);
  EXPECT_EQ(events.count, 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "v1/quarantine"));
}

TEST_F(UserTierTest, ForeignSqliteDatabaseIsNotAdopted) {
  // Another program's database where an index should be: moved aside.
  {
    auto t = tier();
    put(*t, "db", entry_named("seed"));
  }
  std::filesystem::remove(dir / "v1/db.ukdb");
  std::string command =
      "sqlite3 '" + (dir / "v1/db.ukdb") + "' 'create table other(x)' 2>/dev/null";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not installed";
  auto t = tier();
  put(*t, "db", entry_named("k"));
  EXPECT_EQ(events.count, 1);
}

TEST_F(UserTierTest, VerifyFindsAndRepairs) {
  auto t = tier();
  Entry good = entry_named("good");
  Entry bad = entry_named("bad");
  Entry unindexed = entry_named("unindexed");
  put(*t, "db", good);
  put(*t, "db", bad);
  std::filesystem::create_directories(
      std::filesystem::path(entry_file("db", unindexed.key)).parent_path());
  {
    std::ofstream out(entry_file("db", unindexed.key), std::ios::binary);
    auto bytes = *encode_entry(unindexed, Compression::kNone);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  testing::write_file(entry_file("db", bad.key), "garbage");

  VerifyReport report;
  ASSERT_TRUE(t->verify(false, report).is_ok());
  EXPECT_EQ(report.entries_checked, 3u);
  EXPECT_EQ(report.entries_ok, 2u);
  EXPECT_EQ(report.problems.size(), 2u);  // the bad entry, the unindexed one
  EXPECT_TRUE(std::filesystem::exists(entry_file("db", bad.key)));  // no repair asked

  VerifyReport repaired;
  ASSERT_TRUE(t->verify(true, repaired).is_ok());
  for (const auto& p : repaired.problems) EXPECT_TRUE(p.repaired) << p.path << ": " << p.problem;
  EXPECT_FALSE(std::filesystem::exists(entry_file("db", bad.key)));
  VerifyReport clean;
  ASSERT_TRUE(t->verify(false, clean).is_ok());
  EXPECT_TRUE(clean.problems.empty());
  EXPECT_EQ(t->list("db")->size(), 2u);
}

TEST_F(UserTierTest, ArchWideDatabaseServesAnyUnitCount) {
  auto t = tier();
  Entry e = entry_named("arch-only");
  put(*t, "sm_90", e);
  EXPECT_TRUE(t->get({"sm_90_132", "sm_90"}, e.key)->has_value());
  EXPECT_FALSE(t->get({"sm_80_108", "sm_80"}, e.key)->has_value());
}

TEST_F(UserTierTest, ClearRemovesEverything) {
  auto t = tier();
  put(*t, "a", entry_named("1"));
  put(*t, "b", entry_named("2"));
  auto removed = t->clear();
  ASSERT_TRUE(removed.is_ok());
  EXPECT_EQ(*removed, 2u);
  EXPECT_TRUE(t->databases()->empty());
  EXPECT_FALSE(t->get({"a", "a"}, entry_named("1").key)->has_value());
  put(*t, "a", entry_named("1"));  // usable again afterwards
  EXPECT_TRUE(t->get({"a", "a"}, entry_named("1").key)->has_value());
}

}  // namespace
}  // namespace kcache
