#include "store/user/user_tier.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "base/hash.h"
#include "fakes/counting_events.h"
#include "fakes/fault_env.h"
#include "fakes/stamp_counting_env.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"

namespace kcache {
namespace {

using testing::CountingEvents;
using testing::TempFolder;

Entry entry_named(const std::string& name) {
  return testing::small_entry("backend fake\nkernel " + name + "\n", name);
}

class UserTierTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tier> tier() {
    return make_user_tier({dir / "v1", true}, Env::posix(), log, events);
  }
  void put(Tier& t, const std::string& db, const Entry& e) {
    ASSERT_TRUE(t.put(db, e, *encode_entry(e, Compression::kNone)).is_ok());
  }
  std::string log_file(const std::string& db) { return dir / "v1/" + db + ".ukdb"; }
  std::string hint_file(const std::string& db) { return dir / "v1/" + db + ".ukdx"; }
  // Where the newest record of `key` lies in the log of `db`.
  userlog::HintRecord record_of(const std::string& db, const CacheKey& key) {
    auto record = testing::newest_record(log_file(db), key);
    EXPECT_TRUE(record.has_value()) << key.hex();
    return record.value_or(userlog::HintRecord{});
  }
  bool hit(Tier& t, const std::string& db, const Entry& e) {
    auto got = t.get({db, db}, e.key);
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    return got.is_ok() && got->has_value() && (*got)->payload().size() == e.payload_size &&
           std::equal(e.payload().begin(), e.payload().end(), (*got)->payload().begin());
  }
  int quarantined() {
    if (!std::filesystem::exists(dir / "v1/quarantine")) return 0;
    return static_cast<int>(
        std::distance(std::filesystem::directory_iterator(dir / "v1/quarantine"),
                      std::filesystem::directory_iterator()));
  }
  TempFolder dir;
  Logger log{LogLevel::kQuiet, {}};
  CountingEvents events;
};

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(random());
  return out;
}

void make_folder_at(const std::string& path) {
  std::filesystem::remove(path);
  std::filesystem::create_directories(path + "/inside");
}

TEST_F(UserTierTest, LayoutAndPrivateFolders) {
  auto t = tier();
  EXPECT_FALSE(std::filesystem::exists(dir / "v1"));  // nothing until the first write
  Entry e = entry_named("k");
  put(*t, "gfx906_60", e);
  // Three files per database (and its locks), no file per entry.
  std::set<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(dir / "v1")) {
    names.insert(f.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"gfx906_60.ukdb", "gfx906_60.ukdx", "gfx906_60.ukdu",
                                          "gfx906_60.locks"}));
  struct stat st;
  ASSERT_EQ(::stat((dir / "v1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (const std::string& file :
       {log_file("gfx906_60"), hint_file("gfx906_60"), dir / "v1/gfx906_60.ukdu"}) {
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  EXPECT_EQ(record_of("gfx906_60", e.key).offset, userlog::kHeaderSize);
  auto listed = t->list("gfx906_60");
  ASSERT_TRUE(listed.is_ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].backend, "fake");
  EXPECT_EQ((*listed)[0].kernels, "k");
  EXPECT_EQ(*t->databases(), std::vector<std::string>{"gfx906_60"});
  EXPECT_TRUE(hit(*tier(), "gfx906_60", e));  // another process reads the hint
}

// A newer record of a key wins (a warmed binary replacing an unwarmed one);
// a removal hides it; every process sees the same.
TEST_F(UserTierTest, NewestRecordWinsAndRemovalsHide) {
  auto writer = tier();
  auto reader = tier();
  Entry old_one = entry_named("k");
  Entry new_one = old_one;
  new_one.storage = ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>("newer"), 5});
  new_one.payload_size = 5;
  put(*writer, "db", old_one);
  EXPECT_TRUE(hit(*reader, "db", old_one));
  put(*writer, "db", new_one);
  EXPECT_TRUE(hit(*writer, "db", new_one));
  EXPECT_TRUE(hit(*tier(), "db", new_one));
  EXPECT_EQ(writer->list("db")->size(), 1u);
  ASSERT_TRUE(writer->remove("db", new_one.key).is_ok());
  EXPECT_FALSE(tier()->get({"db", "db"}, new_one.key)->has_value());
  EXPECT_TRUE(writer->list("db")->empty());
  ASSERT_TRUE(writer->remove("db", new_one.key).is_ok());  // removing what is absent
  EXPECT_EQ(events.count, 0);
}

// The log is read before a record is found bad (the hint may be what is
// wrong); holding no good record of the key elsewhere, it is reported,
// kept in quarantine/ and removed.
TEST_F(UserTierTest, CorruptRecordIsCopiedToQuarantineAndRemoved) {
  auto t = tier();
  Entry e = entry_named("bad");
  Entry other = entry_named("other");
  put(*t, "db", e);
  put(*t, "db", other);
  const auto record = record_of("db", e.key);
  testing::overwrite(log_file("db"), record.offset + record.size - 1, "!");
  auto got = t->get({"db", "db"}, e.key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(events.count, 1);
  ASSERT_EQ(quarantined(), 1);
  for (const auto& f : std::filesystem::directory_iterator(dir / "v1/quarantine")) {
    EXPECT_NE(f.path().filename().string().find(e.key.hex()), std::string::npos);
    EXPECT_EQ(std::filesystem::file_size(f.path()), record.size);  // the bad bytes, kept
  }
  EXPECT_FALSE(testing::newest_record(log_file("db"), e.key));  // a removal follows it
  EXPECT_FALSE(tier()->get({"db", "db"}, e.key)->has_value());
  EXPECT_EQ(events.count, 1);  // met once: the removal hides it from everyone
  EXPECT_EQ(t->list("db")->size(), 1u);
  EXPECT_TRUE(hit(*t, "db", other));
  put(*t, "db", e);  // recompiled and stored again
  EXPECT_TRUE(hit(*tier(), "db", e));
}

// A hint record that names another key's record (a forged or misplaced
// hint) is never served: the entry's own key is checked.
// A hint whose records pass their checks but whose offsets are wrong (here
// a's record names b's bytes) is what is wrong, not the log: a is served
// from where the log holds it, nothing is reported or removed, and the
// hint is rebuilt, so a fresh process reads the right offsets at once.
TEST_F(UserTierTest, HintPointingAtAnotherKeysRecordServesTheLogsRecord) {
  auto t = tier();
  Entry a = entry_named("a");
  Entry b = entry_named("b");
  put(*t, "db", a);
  put(*t, "db", b);
  const auto b_record = record_of("db", b.key);
  testing::append_hint(hint_file("db"), {a.key, b_record.offset, b_record.size});
  auto reader = tier();
  EXPECT_TRUE(hit(*reader, "db", a));
  EXPECT_TRUE(hit(*reader, "db", b));
  EXPECT_EQ(events.count, 0);
  EXPECT_EQ(quarantined(), 0);
  // The hint, rebuilt: one record per key, the misplacing one gone.
  EXPECT_EQ(std::filesystem::file_size(hint_file("db")),
            userlog::kHeaderSize + 2 * userlog::kHintRecordSize);
  EXPECT_TRUE(hit(*tier(), "db", a));
  VerifyReport report;
  ASSERT_TRUE(tier()->verify(false, report).is_ok());
  EXPECT_TRUE(report.problems.empty()) << report.problems[0].problem;
}

TEST_F(UserTierTest, GarbageLogIsQuarantinedAndReplaced) {
  for (const std::string& garbage : {std::string(5000, 'x'), std::string("short"), std::string()}) {
    SCOPED_TRACE(garbage.size());
    testing::write_file(log_file("db"), garbage);
    std::filesystem::remove(hint_file("db"));
    auto t = tier();
    EXPECT_FALSE(t->get({"db", "db"}, entry_named("fresh").key)->has_value());
    Entry e = entry_named("fresh");
    put(*t, "db", e);
    EXPECT_EQ(t->list("db")->size(), 1u);
    EXPECT_TRUE(hit(*tier(), "db", e));
  }
  EXPECT_EQ(events.count, 3);
  EXPECT_EQ(quarantined(), 3);
}

TEST_F(UserTierTest, FolderWhereTheLogBelongsIsMovedAside) {
  make_folder_at(log_file("db"));
  auto t = tier();
  Entry e = entry_named("k");
  EXPECT_FALSE(t->get({"db", "db"}, e.key)->has_value());
  put(*t, "db", e);
  EXPECT_TRUE(hit(*tier(), "db", e));
  EXPECT_EQ(events.count, 1);
  EXPECT_EQ(quarantined(), 1);
}

// The hint is derived: damaged, missing, torn, of another log, or a
// folder, it never fails a lookup or a put and never hides an entry; the
// next writer rebuilds it, and verify reports and repairs it.
TEST_F(UserTierTest, DamagedHintNeverFailsALookupOrAPut) {
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> damages = {
      {"missing", [](const std::string& h) { std::filesystem::remove(h); }},
      {"zero-length", [](const std::string& h) { testing::write_file(h, ""); }},
      {"garbage", [](const std::string& h) { testing::write_file(h, random_bytes(4096, 1)); }},
      {"header flipped",
       [](const std::string& h) {
         std::string bytes = testing::read_file(h);
         bytes[20] ^= 0x01;
         testing::write_file(h, bytes);
       }},
      {"torn last record",
       [](const std::string& h) {
         std::filesystem::resize_file(h, std::filesystem::file_size(h) - 5);
       }},
      {"zeroed records",
       [](const std::string& h) {
         testing::overwrite(h, userlog::kHeaderSize, std::string(64, '\0'));
       }},
      {"of another log",
       [](const std::string& h) {
         const auto header =
             userlog::encode_header(userlog::FileKind::kHint, userlog::new_generation());
         testing::overwrite(h, 0, {reinterpret_cast<const char*>(header.data()), header.size()});
       }},
      {"a folder", [](const std::string& h) { make_folder_at(h); }},
  };
  for (const auto& [name, damage] : damages) {
    SCOPED_TRACE(name);
    std::filesystem::remove_all(dir / "v1");
    std::vector<Entry> entries;
    {
      auto t = tier();
      for (int i = 0; i < 5; ++i) {
        entries.push_back(entry_named(name + std::to_string(i)));
        put(*t, "db", entries.back());
      }
    }
    damage(hint_file("db"));
    VerifyReport report;
    ASSERT_TRUE(tier()->verify(false, report).is_ok());
    EXPECT_FALSE(report.problems.empty());
    EXPECT_EQ(report.entries_ok, entries.size());
    {
      // Readers find everything (and may rebuild the hint on the way).
      auto reader = tier();
      for (const auto& e : entries) EXPECT_TRUE(hit(*reader, "db", e));
      EXPECT_EQ(reader->list("db")->size(), entries.size());
    }
    VerifyReport repaired;
    ASSERT_TRUE(tier()->verify(true, repaired).is_ok());
    for (const auto& p : repaired.problems) EXPECT_TRUE(p.repaired) << p.path << ": " << p.problem;
    VerifyReport clean;
    ASSERT_TRUE(tier()->verify(false, clean).is_ok());
    for (const auto& p : clean.problems) ADD_FAILURE() << p.path << ": " << p.problem;
    auto writer = tier();
    Entry more = entry_named(name + "-more");
    put(*writer, "db", more);
    auto reader = tier();
    for (const auto& e : entries) EXPECT_TRUE(hit(*reader, "db", e));
    EXPECT_TRUE(hit(*reader, "db", more));
  }
}

TEST_F(UserTierTest, VerifyFindsAndRepairs) {
  auto t = tier();
  Entry good = entry_named("good");
  Entry bad = entry_named("bad");
  Entry after = entry_named("after");
  put(*t, "db", good);
  put(*t, "db", bad);
  put(*t, "db", after);
  // A record appended without its hint record (its writer was killed).
  Entry unhinted = entry_named("unhinted");
  auto bytes = *encode_entry(unhinted, Compression::kNone);
  bytes.resize(userlog::padded(bytes.size()));
  const auto end = std::filesystem::file_size(log_file("db"));
  testing::overwrite(log_file("db"), end,
                     {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  // Damage in the middle, and half a record at the end.
  const auto bad_record = record_of("db", bad.key);
  testing::overwrite(log_file("db"), bad_record.offset + 10, "garbage");
  testing::overwrite(log_file("db"), end + bytes.size(), std::string(100, 'K'));

  VerifyReport report;
  ASSERT_TRUE(t->verify(false, report).is_ok());
  EXPECT_EQ(report.entries_checked, 4u);  // good, after, unhinted, and the damaged one
  EXPECT_EQ(report.entries_ok, 3u);
  std::set<std::string> problems;
  for (const auto& p : report.problems) problems.insert(p.problem);
  // The damaged record (named by the key the hint places there), the torn
  // tail, the entry missing from the hint.
  ASSERT_EQ(report.problems.size(), 3u) << ::testing::PrintToString(problems);
  EXPECT_NE(report.problems[0].problem.find("entry " + bad.key.hex()), std::string::npos)
      << report.problems[0].problem;
  EXPECT_EQ(std::filesystem::file_size(log_file("db")), end + bytes.size() + 100);  // no repair

  VerifyReport repaired;
  ASSERT_TRUE(t->verify(true, repaired).is_ok());
  for (const auto& p : repaired.problems) EXPECT_TRUE(p.repaired) << p.path << ": " << p.problem;
  EXPECT_EQ(quarantined(), 1);  // the damaged bytes
  VerifyReport clean;
  ASSERT_TRUE(t->verify(false, clean).is_ok());
  for (const auto& p : clean.problems) ADD_FAILURE() << p.path << ": " << p.problem;
  EXPECT_EQ(clean.entries_ok, 3u);
  auto other = tier();
  for (Tier* reader : {t.get(), other.get()}) {
    EXPECT_TRUE(hit(*reader, "db", good));
    EXPECT_TRUE(hit(*reader, "db", after));
    EXPECT_TRUE(hit(*reader, "db", unhinted));
    EXPECT_FALSE(reader->get({"db", "db"}, bad.key)->has_value());
  }
  EXPECT_EQ(t->list("db")->size(), 3u);
}

// A writer killed halfway through an append leaves part of a record at the
// end of the log; one killed after its append leaves a record without its
// hint. The next writer cuts the first off and hints the second.
TEST_F(UserTierTest, NextWriterCutsATornTailAndHintsWhatWasLeft) {
  Entry first = entry_named("first");
  Entry orphan = entry_named("orphan");
  {
    auto t = tier();
    put(*t, "db", first);
  }
  auto bytes = *encode_entry(orphan, Compression::kNone);
  bytes.resize(userlog::padded(bytes.size()));
  auto end = std::filesystem::file_size(log_file("db"));
  testing::overwrite(log_file("db"), end,
                     {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  auto torn = *encode_entry(entry_named("torn"), Compression::kNone);
  testing::overwrite(log_file("db"), end + bytes.size(),
                     {reinterpret_cast<const char*>(torn.data()), torn.size() / 2});
  auto reader = tier();
  EXPECT_TRUE(hit(*reader, "db", orphan));  // readers read the log past its hint

  auto writer = tier();
  Entry next = entry_named("next");
  put(*writer, "db", next);
  EXPECT_EQ(record_of("db", next.key).offset, end + bytes.size());  // where the torn one began
  for (const Entry& e : {first, orphan, next}) EXPECT_TRUE(hit(*reader, "db", e));
  VerifyReport clean;
  ASSERT_TRUE(tier()->verify(false, clean).is_ok());
  for (const auto& p : clean.problems) ADD_FAILURE() << p.path << ": " << p.problem;
  EXPECT_EQ(events.count, 0);
}

// Hint records that cannot be written (a full disk) while a writer catches
// up are looked for again by the next append: the record they name is not
// skipped for good.
TEST_F(UserTierTest, HintRecordsThatCannotBeWrittenAreWrittenLater) {
  Entry orphan = entry_named("orphan");
  {
    auto t = tier();
    put(*t, "db", entry_named("first"));
  }
  auto bytes = *encode_entry(orphan, Compression::kNone);
  bytes.resize(userlog::padded(bytes.size()));
  testing::overwrite(log_file("db"), std::filesystem::file_size(log_file("db")),
                     {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  testing::FaultEnv env;
  auto writer = make_user_tier({dir / "v1", true}, env, log, events);
  env.inject(testing::FaultOp::kWrite, ".ukdx", ENOSPC);
  Entry second = entry_named("second");
  EXPECT_FALSE(writer->put("db", second, *encode_entry(second, Compression::kNone)).is_ok());
  env.clear_faults();
  Entry third = entry_named("third");
  put(*writer, "db", third);
  VerifyReport report;
  ASSERT_TRUE(tier()->verify(false, report).is_ok());
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.problem;
  auto reader = tier();
  EXPECT_TRUE(hit(*reader, "db", orphan));
  EXPECT_TRUE(hit(*reader, "db", third));
}

// An I/O error while listing is an error, not damage: nothing is removed.
TEST_F(UserTierTest, ReadErrorWhileListingRemovesNothing) {
  Entry e = entry_named("k");
  put(*tier(), "db", e);
  testing::FaultEnv env;
  auto t = make_user_tier({dir / "v1", true}, env, log, events);
  env.inject(testing::FaultOp::kRead, ".ukdb", EIO);
  auto listed = t->list("db");
  EXPECT_FALSE(listed.is_ok());
  EXPECT_NE(listed.status().message().find("Input/output error"), std::string::npos);
  env.clear_faults();
  EXPECT_TRUE(hit(*t, "db", e));
  EXPECT_EQ(events.count, 0);
}

// A reader that meets a bad log moves it aside only when no one is
// appending (it may be being replaced); otherwise the next write does.
TEST_F(UserTierTest, BadLogIsMovedAsideOnlyUnderTheAppendLock) {
  testing::write_file(log_file("db"), std::string(5000, 'x'));
  auto held = Env::posix().try_lock(dir / "v1/db.locks", 0, 0600);
  ASSERT_TRUE(held.is_ok() && *held != nullptr);
  auto t = tier();
  EXPECT_FALSE(t->get({"db", "db"}, entry_named("k").key)->has_value());
  EXPECT_EQ(std::filesystem::file_size(log_file("db")), 5000u);  // left in place
  EXPECT_EQ(quarantined(), 0);
  held->reset();
  EXPECT_FALSE(t->get({"db", "db"}, entry_named("k").key)->has_value());
  EXPECT_EQ(quarantined(), 1);
  EXPECT_EQ(events.count, 1);
  EXPECT_FALSE(std::filesystem::exists(log_file("db")));
}

// A failed append (a full disk) is cut off again: nothing half-written is
// left for a reader, and the next append starts where it began.
TEST_F(UserTierTest, FailedAppendLeavesNothingBehind) {
  testing::FaultEnv env;
  auto t = make_user_tier({dir / "v1", true}, env, log, events);
  put(*t, "db", entry_named("before"));
  const auto size = std::filesystem::file_size(log_file("db"));
  for (testing::FaultOp op : {testing::FaultOp::kWrite, testing::FaultOp::kSync}) {
    env.inject(op, ".ukdb", ENOSPC, /*after_bytes=*/40);
    Entry e = entry_named("fails");
    Status s = t->put("db", e, *encode_entry(e, Compression::kNone));
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
    EXPECT_EQ(std::filesystem::file_size(log_file("db")), size);
    env.clear_faults();
  }
  Entry e = entry_named("after");
  put(*t, "db", e);
  EXPECT_EQ(record_of("db", e.key).offset, size);
  EXPECT_TRUE(hit(*tier(), "db", e));
}

// A read-only cache (file system or files) serves its entries; writes fail
// with a message naming the file.
TEST_F(UserTierTest, ReadOnlyCacheServesHits) {
  Entry e = entry_named("k");
  put(*tier(), "db", e);
  testing::FaultEnv env;
  env.read_only(dir / "v1");
  auto t = make_user_tier({dir / "v1", true}, env, log, events);
  EXPECT_TRUE(hit(*t, "db", e));
  Entry other = entry_named("other");
  Status s = t->put("db", other, *encode_entry(other, Compression::kNone));
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.message();
  EXPECT_TRUE(hit(*t, "db", e));
  EXPECT_EQ(events.count, 0);
}

// verify of a read-only cache checks every entry as it is (no lock can be
// made there, and none is needed: no process can append), and says that
// repair cannot run there. It said "cannot open lock file", then "0 of 0
// entries ok", then offered --repair.
TEST_F(UserTierTest, VerifyOfAReadOnlyCacheChecksItAsItIs) {
  put(*tier(), "db", entry_named("a"));
  put(*tier(), "db", entry_named("b"));
  testing::FaultEnv env;
  env.read_only(dir / "v1");
  auto t = make_user_tier({dir / "v1", true}, env, log, events);
  for (bool repair : {false, true}) {
    VerifyReport report;
    ASSERT_TRUE(t->verify(repair, report).is_ok());
    EXPECT_TRUE(report.problems.empty())
        << report.problems[0].path << ": " << report.problems[0].problem;
    EXPECT_EQ(report.databases_checked, 1u);
    EXPECT_EQ(report.entries_checked, 2u);
    EXPECT_EQ(report.entries_ok, 2u);
    EXPECT_NE(report.cannot_repair.find(dir / "v1" + " is read-only"), std::string::npos)
        << report.cannot_repair;
  }
  // Writable: repair can run.
  VerifyReport writable;
  ASSERT_TRUE(tier()->verify(false, writable).is_ok());
  EXPECT_EQ(writable.cannot_repair, "");
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

// A reader keeps the log open. Another process may clear the cache (new
// files come) or compact it (verify --repair): the reader then finds what
// is stored, never what was removed.
TEST_F(UserTierTest, ReaderFollowsFilesReplacedByAnotherProcess) {
  auto reader = tier();
  auto other = tier();  // another process's view of the same folder
  Entry first = entry_named("first");
  put(*other, "sm_90", first);
  ASSERT_TRUE(hit(*reader, "sm_90", first));  // log now held open

  ASSERT_TRUE(other->clear().is_ok());
  EXPECT_FALSE(reader->get({"sm_90", "sm_90"}, entry_named("absent").key)->has_value());
  Entry second = entry_named("second");
  put(*other, "sm_90", second);  // a new log, same path
  EXPECT_TRUE(hit(*reader, "sm_90", second));
  EXPECT_FALSE(reader->get({"sm_90", "sm_90"}, first.key)->has_value());
  put(*other, "sm_90", first);
  EXPECT_TRUE(hit(*reader, "sm_90", first));

  // Compacted by another process (damage in the middle forces it).
  Entry third = entry_named("third");
  Entry fourth = entry_named("fourth");
  put(*other, "sm_90", third);
  put(*other, "sm_90", fourth);
  auto record = record_of("sm_90", third.key);
  testing::overwrite(log_file("sm_90"), record.offset + 20, "xx");
  VerifyReport repaired;
  ASSERT_TRUE(other->verify(true, repaired).is_ok());
  Entry fifth = entry_named("fifth");
  put(*other, "sm_90", fifth);
  EXPECT_TRUE(hit(*reader, "sm_90", fifth));
  EXPECT_TRUE(hit(*reader, "sm_90", fourth));
  EXPECT_FALSE(reader->get({"sm_90", "sm_90"}, third.key)->has_value());
}

// Many threads of one process, each with its own tier (as separate
// processes would be), append at once: every entry lands whole.
TEST_F(UserTierTest, ConcurrentWritersAppendEveryEntryWhole) {
  constexpr int kThreads = 4;
  constexpr int kEach = 40;
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([this, w] {
      auto t = tier();
      for (int i = 0; i < kEach; ++i) {
        Entry e = entry_named("w" + std::to_string(w) + "-" + std::to_string(i));
        EXPECT_TRUE(t->put("db", e, *encode_entry(e, Compression::kNone)).is_ok());
        EXPECT_TRUE(t->get({"db", "db"}, e.key)->has_value());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto reader = tier();
  EXPECT_EQ(reader->list("db")->size(), static_cast<std::size_t>(kThreads * kEach));
  VerifyReport clean;
  ASSERT_TRUE(reader->verify(false, clean).is_ok());
  for (const auto& p : clean.problems) ADD_FAILURE() << p.path << ": " << p.problem;
  EXPECT_EQ(clean.entries_ok, static_cast<std::uint64_t>(kThreads * kEach));
}

// Records damaged in every way are misses, copied to quarantine/.
TEST_F(UserTierTest, EveryKindOfBadRecordIsAMissAndQuarantined) {
  auto t = tier();
  const std::vector<std::pair<std::string, std::function<void(const userlog::HintRecord&)>>>
      damages = {
          {"zeroed",
           [&](const userlog::HintRecord& r) {
             testing::overwrite(log_file("db"), r.offset, std::string(r.size, '\0'));
           }},
          {"header garbage",
           [&](const userlog::HintRecord& r) {
             testing::overwrite(log_file("db"), r.offset, random_bytes(88, 5));
           }},
          {"sizes changed",
           [&](const userlog::HintRecord& r) {
             testing::overwrite(log_file("db"), r.offset + 56, "\x01\x02");
           }},
          {"flipped bit",
           [&](const userlog::HintRecord& r) {
             std::string byte = testing::read_file(log_file("db")).substr(r.offset + r.size / 2, 1);
             byte[0] ^= 0x01;
             testing::overwrite(log_file("db"), r.offset + r.size / 2, byte);
           }},
          {"log cut short",
           [&](const userlog::HintRecord& r) {
             std::filesystem::resize_file(log_file("db"), r.offset + r.size - 1);
           }},
      };
  int n = 0;
  for (const auto& [name, damage] : damages) {
    SCOPED_TRACE(name);
    Entry e = entry_named("bad-" + name);
    put(*t, "db", e);
    damage(record_of("db", e.key));
    auto got = tier()->get({"db", "db"}, e.key);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_FALSE(got->has_value());
    EXPECT_EQ(events.count, ++n);
    put(*t, "db", e);  // recompiled and stored again
    EXPECT_TRUE(hit(*tier(), "db", e));
  }
  EXPECT_GE(quarantined(), 4);  // a record cut short has no bytes to copy
}

// A writer killed before its rename leaves a temporary file: never read;
// verify reports it once it is old, and --repair removes it.
TEST_F(UserTierTest, StaleTemporaryFilesAreReportedAndRemoved) {
  auto t = tier();
  Entry e = entry_named("k");
  put(*t, "db", e);
  const std::string temp = log_file("db") + ".tmp.123456";
  testing::write_file(temp, "half a log");
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
  EXPECT_TRUE(hit(*t, "db", e));
}

// Only a holder of the append lock compacts, so a compaction's temporary
// file seen under that lock was left by a killed compaction, however
// recent: verify reports it and --repair removes it in one pass, and the
// first write of a process removes it unasked.
TEST_F(UserTierTest, WhatAKilledCompactionLeftIsRemovedAtOnce) {
  auto t = tier();
  Entry e = entry_named("k");
  put(*t, "db", e);
  const std::string temp = log_file("db") + ".tmp.compact.123";
  testing::write_file(temp, std::string(100000, 'x'));
  VerifyReport report;
  ASSERT_TRUE(tier()->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].path, temp);
  EXPECT_EQ(report.problems[0].problem, "temporary file left by an interrupted compaction");
  VerifyReport repaired;
  ASSERT_TRUE(tier()->verify(true, repaired).is_ok());
  ASSERT_EQ(repaired.problems.size(), 1u);
  EXPECT_TRUE(repaired.problems[0].repaired);
  EXPECT_FALSE(std::filesystem::exists(temp));

  testing::write_file(temp, std::string(100000, 'x'));
  auto writer = tier();
  put(*writer, "db", entry_named("another"));
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_TRUE(hit(*writer, "db", e));
}

// A log that is not a log is moved aside with its hint in one pass: a
// second verify finds nothing.
TEST_F(UserTierTest, RepairOfAnEmptiedLogNeedsOnePass) {
  auto t = tier();
  put(*t, "db", entry_named("k"));
  for (const std::string& garbage : {std::string(), std::string(5000, 'x')}) {
    SCOPED_TRACE(garbage.size());
    testing::write_file(log_file("db"), garbage);
    VerifyReport repaired;
    ASSERT_TRUE(tier()->verify(true, repaired).is_ok());
    ASSERT_FALSE(repaired.problems.empty());
    for (const auto& problem : repaired.problems) EXPECT_TRUE(problem.repaired) << problem.problem;
    VerifyReport again;
    ASSERT_TRUE(tier()->verify(false, again).is_ok());
    EXPECT_TRUE(again.problems.empty())
        << again.problems[0].path << ": " << again.problems[0].problem;
    put(*tier(), "db", entry_named("k"));
  }
}

// On a network file system the cache works as anywhere, with one warning
// (every hit reads over the network); FUSE gets none.
TEST_F(UserTierTest, NetworkFileSystemWarnsOnce) {
  testing::FaultEnv env;
  env.file_systems[dir.path()] = {FileSystemKind::kNetwork, "nfs"};
  std::vector<std::string> lines;
  Logger captured(LogLevel::kDebug,
                  [&](LogLevel, std::string_view line) { lines.emplace_back(line); });
  {
    auto t = make_user_tier({dir / "v1", true}, env, captured, events);
    for (int i = 0; i < 3; ++i) put(*t, "db", entry_named("n" + std::to_string(i)));
    put(*t, "other", entry_named("o"));
    EXPECT_EQ(t->list("db")->size(), 3u);
    EXPECT_TRUE(hit(*t, "db", entry_named("n1")));
  }
  int warnings = 0;
  for (const auto& line : lines) {
    if (line.starts_with("kcache: Warning")) {
      ++warnings;
      EXPECT_NE(line.find("network file system (nfs)"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(warnings, 1);

  TempFolder fuse;
  env.file_systems[fuse.path()] = {FileSystemKind::kFuse, "fuse"};
  lines.clear();
  {
    auto t = make_user_tier({fuse / "v1", true}, env, captured, events);
    put(*t, "db", entry_named("f"));
    EXPECT_TRUE(hit(*t, "db", entry_named("f")));
  }
  for (const auto& line : lines) EXPECT_FALSE(line.starts_with("kcache: Warning")) << line;
}

// A later hit of a record lends a view of the mapped log: the same bytes,
// at the same address, without reading them again.
TEST_F(UserTierTest, LaterHitsLendTheMappedRecord) {
  auto t = tier();
  Entry e = entry_named("mapped");
  put(*t, "db", e);
  auto first = t->get({"db", "db"}, e.key);
  auto second = t->get({"db", "db"}, e.key);
  ASSERT_TRUE(first.is_ok() && first->has_value());
  ASSERT_TRUE(second.is_ok() && second->has_value());
  EXPECT_TRUE(hit(*t, "db", e));
  EXPECT_EQ((*first)->payload().data(), (*second)->payload().data());
  EXPECT_EQ(events.count, 0);
}

// The first read of a record the mapping already covers makes no system
// call (its full check holds whatever the log holds); a later read, which
// lends the record unchecked, looks at the log's stamp first.
TEST_F(UserTierTest, AFirstReadLooksNotAtTheLogALaterOneDoes) {
  testing::StampCountingEnv env;
  auto t = make_user_tier({dir / "v1", true}, env, log, events);
  Entry a = entry_named("a");
  Entry b = entry_named("b");
  put(*t, "db", a);
  put(*t, "db", b);
  EXPECT_TRUE(hit(*t, "db", a));  // maps the log (its stamp is taken then)
  const int after_map = env.stamps();
  EXPECT_TRUE(hit(*t, "db", b));
  EXPECT_EQ(env.stamps(), after_map) << "the first read of b looked at the log";
  EXPECT_TRUE(hit(*t, "db", a));
  EXPECT_TRUE(hit(*t, "db", b));
  EXPECT_EQ(env.stamps(), after_map + 2) << "a later read lent a record without looking";
  EXPECT_EQ(events.count, 0);
}

// A record checked once is not trusted after the log changes: an edit in
// place (in a later clock tick) is caught on the next hit, reported and
// moved to quarantine like any damage.
TEST_F(UserTierTest, AnEditInPlaceAfterAHitIsCaughtOnTheNextHit) {
  auto t = tier();
  Entry e = entry_named("edited");
  Entry other = entry_named("other");
  put(*t, "db", e);
  put(*t, "db", other);
  EXPECT_TRUE(hit(*t, "db", e));
  EXPECT_TRUE(hit(*t, "db", e));  // checked, then lent
  const auto record = record_of("db", e.key);
  testing::overwrite(log_file("db"), record.offset + record.size - 1, "!");
  // As a later tick would stamp it, whatever the clock's granularity.
  std::filesystem::last_write_time(
      log_file("db"), std::filesystem::last_write_time(log_file("db")) + std::chrono::seconds(2));
  auto got = t->get({"db", "db"}, e.key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(events.count, 1);
  EXPECT_EQ(quarantined(), 1);
  EXPECT_TRUE(hit(*t, "db", other));
}

// A log cut short beneath a mapping that lent a record is not read
// through the mapping again: the record cut off is a miss, and whatever
// a reader still holds is not touched here.
TEST_F(UserTierTest, ALogTruncatedBeneathItsMappingIsAMiss) {
  auto t = tier();
  Entry e = entry_named("kept");
  Entry cut = entry_named("cut");
  put(*t, "db", e);
  put(*t, "db", cut);
  auto held = t->get({"db", "db"}, cut.key);
  ASSERT_TRUE(held.is_ok() && held->has_value());
  const auto record = record_of("db", cut.key);
  std::filesystem::resize_file(log_file("db"), record.offset);
  auto got = t->get({"db", "db"}, cut.key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(hit(*t, "db", e));
  put(*t, "db", cut);  // compiled and stored again
  EXPECT_TRUE(hit(*t, "db", cut));
  EXPECT_TRUE(hit(*tier(), "db", cut));
}

// What another process appends after this one mapped the log is served
// too (the log is mapped again, as far as it now reaches).
TEST_F(UserTierTest, AnAppendAfterTheMappingIsServed) {
  auto reader = tier();
  auto writer = tier();
  Entry e = entry_named("before");
  Entry later = entry_named("after");
  put(*writer, "db", e);
  EXPECT_TRUE(hit(*reader, "db", e));
  for (int i = 0; i < 20; ++i) {
    Entry more = entry_named("after" + std::to_string(i));
    put(*writer, "db", more);
    EXPECT_TRUE(hit(*reader, "db", more)) << i;
    EXPECT_TRUE(hit(*reader, "db", e)) << i;
  }
  put(*writer, "db", later);
  EXPECT_TRUE(hit(*reader, "db", later));
  EXPECT_EQ(events.count, 0);
}

}  // namespace
}  // namespace kcache
