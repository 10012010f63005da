#include "store/user/user_tier.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "fakes/fault_env.h"
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
  entry.key = CacheKey(xxh3_128(entry.material));
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

// Found by fuzz_kdb_open: an index whose schema is damaged (here a column
// renamed in place) passes SQLite's quick_check, and every statement then
// failed with "no such column", an I/O error that neither the tier nor
// `verify --repair` rebuilds. It is corruption: quarantined and rebuilt.
TEST_F(UserTierTest, IndexWithADamagedSchemaIsQuarantinedAndRebuilt) {
  {
    auto t = tier();
    put(*t, "db", entry_named("kept"));
  }
  std::string index = testing::read_file(dir / "v1/db.ukdb");
  const std::size_t column = index.find("key BLOB PRIMARY KEY");
  ASSERT_NE(column, std::string::npos);
  index[column + 2] = 'z';  // "kez": the entries table has no key column
  testing::write_file(dir / "v1/db.ukdb", index);
  auto t = tier();
  auto listed = t->list("db");
  ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_EQ(events.count, 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "v1/quarantine"));
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

// Hits read through the entries folder held open. Another process may
// clear the cache (its folders go, new ones come) or move the folder away:
// this tier then still finds what is stored, never what was removed.
TEST_F(UserTierTest, HeldFolderFollowsAClearByAnotherProcess) {
  auto reader = tier();
  auto other = tier();  // another process's view of the same folder
  Entry first = entry_named("first");
  put(*other, "sm_90", first);
  ASSERT_TRUE(reader->get({"sm_90", "sm_90"}, first.key)->has_value());  // folder now held

  ASSERT_TRUE(other->clear().is_ok());
  EXPECT_FALSE(reader->get({"sm_90", "sm_90"}, first.key)->has_value());
  Entry second = entry_named("second");
  put(*other, "sm_90", second);  // a new entries folder, same path
  EXPECT_TRUE(reader->get({"sm_90", "sm_90"}, second.key)->has_value());
  EXPECT_FALSE(reader->get({"sm_90", "sm_90"}, first.key)->has_value());
  put(*other, "sm_90", first);
  EXPECT_TRUE(reader->get({"sm_90", "sm_90"}, first.key)->has_value());

  // A folder moved away whole is gone from the path: a new entry stored
  // there is found.
  std::filesystem::rename(dir / "v1/sm_90.entries", dir / "moved");
  Entry third = entry_named("third");
  put(*other, "sm_90", third);
  EXPECT_TRUE(reader->get({"sm_90", "sm_90"}, third.key)->has_value());
  EXPECT_EQ(events.count, 0);
}

// Damage to the index, its WAL or its shared-memory file, with real SQLite
// files: a lookup never fails (hits never read the index), a put never
// fails, `list` works, and `verify --repair` leaves an index whose rows are
// exactly the entry files (the truth). A damaged file is moved to
// quarantine/, never deleted.
struct IndexDamage {
  std::string name;
  bool crashed;  // applied to a cache copied while open (rows in its WAL)
  std::function<void(const std::string& index)> apply;
};

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(random());
  return out;
}

void overwrite(const std::string& path, std::size_t offset, const std::string& bytes) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void make_folder_at(const std::string& path) {
  std::filesystem::remove(path);
  std::filesystem::create_directories(path + "/inside");
}

std::vector<IndexDamage> index_damages(const std::string& foreign_wal) {
  auto size_of = [](const std::string& p) { return std::filesystem::file_size(p); };
  return {
      {"WAL garbage", true,
       [=](const std::string& i) {
         testing::write_file(i + "-wal", random_bytes(size_of(i + "-wal"), 1));
       }},
      {"WAL truncated", true,
       [=](const std::string& i) {
         std::filesystem::resize_file(i + "-wal", size_of(i + "-wal") / 2);
       }},
      {"WAL zeroed page", true,
       [](const std::string& i) {
         overwrite(i + "-wal", 32 + 24 + 4120, std::string(4096, '\0'));
       }},
      {"WAL flipped bit", true,
       [](const std::string& i) {
         std::string bytes = testing::read_file(i + "-wal");
         bytes[bytes.size() / 3] ^= 0x10;
         testing::write_file(i + "-wal", bytes);
       }},
      {"WAL of another index", true,
       [=](const std::string& i) {
         std::filesystem::copy_file(foreign_wal, i + "-wal",
                                    std::filesystem::copy_options::overwrite_existing);
       }},
      {"WAL is a folder", true, [](const std::string& i) { make_folder_at(i + "-wal"); }},
      {"WAL without its index", true, [](const std::string& i) { std::filesystem::remove(i); }},
      {"SHM garbage", true,
       [=](const std::string& i) {
         testing::write_file(i + "-shm", random_bytes(size_of(i + "-shm"), 2));
       }},
      {"SHM zero-length", true, [](const std::string& i) { testing::write_file(i + "-shm", ""); }},
      {"SHM is a folder", true, [](const std::string& i) { make_folder_at(i + "-shm"); }},
      {"index garbage", true,
       [](const std::string& i) { testing::write_file(i, random_bytes(8192, 3)); }},
      {"index zero-length", false, [](const std::string& i) { testing::write_file(i, ""); }},
      {"index truncated", false,
       [=](const std::string& i) { std::filesystem::resize_file(i, size_of(i) / 2); }},
      {"index truncated to 50 bytes", false,
       [](const std::string& i) { std::filesystem::resize_file(i, 50); }},
      {"index zeroed page", false,
       [](const std::string& i) { overwrite(i, 4 * 4096, std::string(4096, '\0')); }},
      {"index flipped bits", false,
       [](const std::string& i) {
         std::string bytes = testing::read_file(i);
         for (std::size_t k = 9 * 4096 + 8; k < 9 * 4096 + 40; ++k) bytes[k] ^= 0x5A;
         testing::write_file(i, bytes);
       }},
      {"index zeroed first page", false,
       [](const std::string& i) { overwrite(i, 0, std::string(4096, '\0')); }},
      {"index is a folder", false, [](const std::string& i) { make_folder_at(i); }},
      {"index is another SQLite file", false,
       [](const std::string& i) {
         testing::write_file(i, "");
         std::string command = "sqlite3 '" + i + "' 'create table other(x)' 2>/dev/null";
         if (std::system(command.c_str()) != 0) testing::write_file(i, random_bytes(4096, 4));
       }},
  };
}

class IndexDamageTest : public UserTierTest {
 protected:
  // Long kernel names: rows that fill many pages, so that damage to one
  // page leaves the rest readable.
  static std::vector<Entry> many_entries(const std::string& prefix) {
    std::vector<Entry> entries;
    for (int i = 0; i < 200; ++i) {
      entries.push_back(entry_named(prefix + std::to_string(i) + std::string(180, 'k')));
    }
    return entries;
  }
};

TEST_F(IndexDamageTest, DamagedIndexWalOrShmNeverFailsALookupOrAPut) {
  const std::vector<Entry> entries = many_entries("e");
  TempFolder crashed;  // copied while the writer had it open
  TempFolder closed;   // copied after a clean close
  TempFolder foreign;  // another index, for its WAL
  {
    Logger quiet{LogLevel::kQuiet, {}};
    CountingEvents ignored;
    auto live = make_user_tier({dir / "live", false}, Env::posix(), quiet, ignored);
    for (const auto& e : entries) put(*live, "db", e);
    std::filesystem::copy(dir / "live", crashed / "v1", std::filesystem::copy_options::recursive);
    auto other = make_user_tier({dir / "other", false}, Env::posix(), quiet, ignored);
    for (const auto& e : many_entries("f")) put(*other, "db", e);
    std::filesystem::copy_file(dir / "other/db.ukdb-wal", foreign / "wal");
  }
  std::filesystem::copy(dir / "live", closed / "v1", std::filesystem::copy_options::recursive);
  ASSERT_GT(std::filesystem::file_size(crashed / "v1/db.ukdb-wal"), 4096u);
  ASSERT_FALSE(std::filesystem::exists(closed / "v1/db.ukdb-wal"));
  ASSERT_GT(std::filesystem::file_size(closed / "v1/db.ukdb"), 12 * 4096u);

  for (const auto& damage : index_damages(foreign / "wal")) {
    SCOPED_TRACE(damage.name);
    TempFolder here;
    std::filesystem::copy(damage.crashed ? crashed / "v1" : closed / "v1", here / "v1",
                          std::filesystem::copy_options::recursive);
    damage.apply(here / "v1/db.ukdb");
    CountingEvents seen;
    auto t = make_user_tier({here / "v1", false}, Env::posix(), log, seen);

    for (const auto& e : entries) {
      auto got = t->get({"db", "db"}, e.key);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_TRUE(got->has_value());
    }
    Entry fresh = entry_named("fresh");
    put(*t, "db", fresh);
    auto listed = t->list("db");
    ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();

    VerifyReport repaired;
    ASSERT_TRUE(t->verify(true, repaired).is_ok());
    for (const auto& p : repaired.problems) {
      EXPECT_TRUE(p.repaired) << p.path << ": " << p.problem;
    }
    VerifyReport clean;
    ASSERT_TRUE(t->verify(false, clean).is_ok());
    for (const auto& p : clean.problems) ADD_FAILURE() << p.path << ": " << p.problem;
    EXPECT_EQ(clean.entries_ok, entries.size() + 1);
    EXPECT_EQ(t->list("db")->size(), entries.size() + 1);

    // A new tier (a new process) sees the same.
    auto again = make_user_tier({here / "v1", false}, Env::posix(), log, seen);
    EXPECT_EQ(again->list("db")->size(), entries.size() + 1);
    EXPECT_TRUE(again->get({"db", "db"}, fresh.key)->has_value());

    // What was moved aside is in quarantine/, with a time stamp.
    if (std::filesystem::exists(here / "v1/quarantine")) {
      for (const auto& f : std::filesystem::directory_iterator(here / "v1/quarantine")) {
        EXPECT_TRUE(f.path().filename().string().starts_with("db.db.ukdb")) << f.path();
        EXPECT_TRUE(f.path().filename().string().ends_with(".bad")) << f.path();
      }
      EXPECT_GE(seen.count, 1);
    }
    // Nothing is left that is not a regular file where SQLite's files go.
    for (std::string suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code error;
      auto status = std::filesystem::symlink_status(here / ("v1/db.ukdb" + suffix), error);
      if (!error && std::filesystem::exists(status)) {
        EXPECT_TRUE(std::filesystem::is_regular_file(status)) << suffix;
      }
    }
  }
}

// The damage that SQLite reports is quarantined as it is met, whole
// (index, WAL and SHM together), and the index rebuilt from the entry files
// at once: `list` shows every entry without `verify --repair`.
TEST_F(IndexDamageTest, CorruptIndexIsQuarantinedWithItsWalAndRebuiltFromEntries) {
  auto t = tier();
  std::vector<Entry> entries = many_entries("r");
  for (const auto& e : entries) put(*t, "db", e);
  t.reset();
  testing::write_file(dir / "v1/db.ukdb", random_bytes(16384, 7));
  testing::write_file(dir / "v1/db.ukdb-wal", random_bytes(9000, 8));
  testing::write_file(dir / "v1/db.ukdb-shm", random_bytes(32768, 9));
  t = tier();
  auto listed = t->list("db");
  ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), entries.size());
  EXPECT_EQ(events.count, 1);
  std::set<std::string> moved;
  for (const auto& f : std::filesystem::directory_iterator(dir / "v1/quarantine")) {
    std::string name = f.path().filename().string();
    moved.insert(name.substr(0, name.find('.', std::string("db.db.ukdb").size())));
  }
  EXPECT_EQ(moved, (std::set<std::string>{"db.db.ukdb", "db.db.ukdb-wal", "db.db.ukdb-shm"}));
}

// Pages zeroed behind the index's first page: it opens, and the statement
// that meets them fails with SQLITE_CORRUPT; the tier then rebuilds the
// index and runs the statement again.
TEST_F(IndexDamageTest, CorruptionMetByAStatementIsRepairedOnTheSpot) {
  std::vector<Entry> entries = many_entries("s");
  {
    auto t = make_user_tier({dir / "v1", false}, Env::posix(), log, events);
    for (const auto& e : entries) put(*t, "db", e);
  }
  ASSERT_GT(std::filesystem::file_size(dir / "v1/db.ukdb"), 8 * 4096u);
  overwrite(dir / "v1/db.ukdb", 3 * 4096, std::string(4096, '\0'));
  overwrite(dir / "v1/db.ukdb", 6 * 4096, std::string(4096, '\0'));
  auto t = make_user_tier({dir / "v1", false}, Env::posix(), log, events);
  auto listed = t->list("db");
  ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), entries.size());
  EXPECT_EQ(events.count, 1);
  put(*t, "db", entry_named("after"));
  EXPECT_EQ(t->list("db")->size(), entries.size() + 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "v1/quarantine"));
}

// verify without --repair reports a damaged index and changes nothing;
// with --repair it rebuilds it.
TEST_F(IndexDamageTest, VerifyReportsThenRepairsADamagedIndex) {
  {
    auto t = tier();
    for (const auto& e : many_entries("v")) put(*t, "db", e);
  }
  std::string bytes = testing::read_file(dir / "v1/db.ukdb");
  for (std::size_t k = 9 * 4096 + 8; k < 9 * 4096 + 40; ++k) bytes[k] ^= 0x5A;
  testing::write_file(dir / "v1/db.ukdb", bytes);
  make_folder_at(dir / "v1/db.ukdb-shm");

  auto t = tier();
  VerifyReport report;
  ASSERT_TRUE(t->verify(false, report).is_ok());
  ASSERT_GE(report.problems.size(), 1u);
  bool named = false;
  for (const auto& p : report.problems) {
    EXPECT_FALSE(p.repaired) << p.path << ": " << p.problem;
    named = named || p.path == dir / "v1/db.ukdb-shm";
  }
  EXPECT_TRUE(named);
  EXPECT_FALSE(std::filesystem::exists(dir / "v1/quarantine"));
  EXPECT_EQ(testing::read_file(dir / "v1/db.ukdb"), bytes);

  VerifyReport repaired;
  ASSERT_TRUE(t->verify(true, repaired).is_ok());
  ASSERT_GE(repaired.problems.size(), 1u);
  for (const auto& p : repaired.problems) EXPECT_TRUE(p.repaired) << p.path << ": " << p.problem;
  VerifyReport clean;
  ASSERT_TRUE(t->verify(false, clean).is_ok());
  EXPECT_TRUE(clean.problems.empty());
  EXPECT_EQ(t->list("db")->size(), many_entries("v").size());
}

// Entry files that are damaged in every way are misses, quarantined.
TEST_F(UserTierTest, EveryKindOfBadEntryIsAMissAndQuarantined) {
  auto t = tier();
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> damages = {
      {"zero-length", [](const std::string& p) { testing::write_file(p, ""); }},
      {"truncated",
       [](const std::string& p) {
         std::filesystem::resize_file(p, std::filesystem::file_size(p) - 1);
       }},
      {"zeroed",
       [](const std::string& p) {
         testing::write_file(p, std::string(std::filesystem::file_size(p), '\0'));
       }},
      {"header only", [](const std::string& p) { std::filesystem::resize_file(p, 88); }},
      {"garbage", [](const std::string& p) { testing::write_file(p, random_bytes(500, 5)); }},
      {"flipped bit",
       [](const std::string& p) {
         std::string bytes = testing::read_file(p);
         bytes[bytes.size() / 2] ^= 0x01;
         testing::write_file(p, bytes);
       }},
      {"a folder", [](const std::string& p) { make_folder_at(p); }},
  };
  int n = 0;
  for (const auto& [name, damage] : damages) {
    SCOPED_TRACE(name);
    Entry e = entry_named("bad-" + name);
    put(*t, "db", e);
    damage(entry_file("db", e.key));
    auto got = t->get({"db", "db"}, e.key);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_FALSE(got->has_value());
    EXPECT_EQ(events.count, ++n);
    EXPECT_FALSE(std::filesystem::exists(entry_file("db", e.key)));
    put(*t, "db", e);  // recompiled and stored again
    EXPECT_TRUE(t->get({"db", "db"}, e.key)->has_value());
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "v1/quarantine"),
                          std::filesystem::directory_iterator()),
            static_cast<long>(damages.size()));
}

// A writer killed before its rename leaves a temporary file: never read as
// an entry; verify reports it once it is old, and --repair removes it.
TEST_F(UserTierTest, StaleTemporaryFilesAreReportedAndRemoved) {
  auto t = tier();
  Entry e = entry_named("k");
  put(*t, "db", e);
  const std::string temp = entry_file("db", e.key) + ".tmp.123.0.42";
  testing::write_file(temp, "half an entry");
  VerifyReport fresh;
  ASSERT_TRUE(t->verify(false, fresh).is_ok());
  EXPECT_TRUE(fresh.problems.empty());  // a writer may still be busy with it
  std::filesystem::last_write_time(
      temp, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  VerifyReport old;
  ASSERT_TRUE(t->verify(false, old).is_ok());
  ASSERT_EQ(old.problems.size(), 1u);
  EXPECT_EQ(old.problems[0].path, temp);
  VerifyReport repaired;
  ASSERT_TRUE(t->verify(true, repaired).is_ok());
  ASSERT_EQ(repaired.problems.size(), 1u);
  EXPECT_TRUE(repaired.problems[0].repaired);
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_TRUE(t->get({"db", "db"}, e.key)->has_value());
}

// On a network file system the index keeps a rollback journal, not WAL,
// with one warning; entries work as anywhere.
TEST_F(UserTierTest, NetworkFileSystemIndexUsesARollbackJournal) {
  testing::FaultEnv env;
  env.file_systems[dir.path()] = {FileSystemKind::kNetwork, "nfs"};
  std::vector<std::string> lines;
  Logger captured(LogLevel::kDebug,
                  [&](LogLevel, std::string_view line) { lines.emplace_back(line); });
  {
    auto t = make_user_tier({dir / "v1", true}, env, captured, events);
    for (int i = 0; i < 3; ++i) put(*t, "db", entry_named("n" + std::to_string(i)));
    EXPECT_FALSE(std::filesystem::exists(dir / "v1/db.ukdb-wal"));
    EXPECT_FALSE(std::filesystem::exists(dir / "v1/db.ukdb-shm"));
    EXPECT_EQ(t->list("db")->size(), 3u);
    EXPECT_TRUE(t->get({"db", "db"}, entry_named("n1").key)->has_value());
  }
  // Byte 18 of a SQLite file: 1 for a rollback journal, 2 for WAL.
  EXPECT_EQ(testing::read_file(dir / "v1/db.ukdb")[18], 1);
  int warnings = 0;
  for (const auto& line : lines) {
    if (line.starts_with("kcache: Warning")) {
      ++warnings;
      EXPECT_NE(line.find("network file system (nfs)"), std::string::npos) << line;
      EXPECT_NE(line.find("rollback journal"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(warnings, 1);

  // An index an earlier run left in WAL mode is switched over.
  TempFolder local;
  {
    auto t = make_user_tier({local / "v1", true}, Env::posix(), log, events);
    put(*t, "db", entry_named("w"));
  }
  EXPECT_EQ(testing::read_file(local / "v1/db.ukdb")[18], 2);
  env.file_systems[local.path()] = {FileSystemKind::kNetwork, "nfs"};
  {
    auto t = make_user_tier({local / "v1", true}, env, log, events);
    put(*t, "db", entry_named("x"));
    EXPECT_EQ(t->list("db")->size(), 2u);
  }
  EXPECT_EQ(testing::read_file(local / "v1/db.ukdb")[18], 1);

  // FUSE (sshfs, or a local FUSE file system) gets the journal, no warning.
  TempFolder fuse;
  env.file_systems[fuse.path()] = {FileSystemKind::kFuse, "fuse"};
  lines.clear();
  {
    auto t = make_user_tier({fuse / "v1", true}, env, captured, events);
    put(*t, "db", entry_named("f"));
  }
  EXPECT_EQ(testing::read_file(fuse / "v1/db.ukdb")[18], 1);
  for (const auto& line : lines) EXPECT_FALSE(line.starts_with("kcache: Warning")) << line;
}

}  // namespace
}  // namespace kcache
