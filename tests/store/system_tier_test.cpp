#include "store/system/system_tier.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/hash.h"
#include "fakes/counting_events.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"
#include "fakes/test_signer.h"
#include "format/kdb_file.h"
#include "sign/key_file.h"

namespace kcache {
namespace {

using testing::TempFolder;
using NullEvents = testing::CountingEvents;

Entry entry_named(const std::string& name) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(name.data()), name.size()});
  entry.payload_size = name.size();
  return entry;
}

void write_package(const std::string& path, const std::vector<Entry>& entries,
                   const KdbSigner* signer = nullptr) {
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  for (const auto& e : entries) encoded.emplace_back(e.key, *encode_entry(e, Compression::kNone));
  ASSERT_TRUE(write_kdb(Env::posix(), path, encoded, {}, signer).is_ok());
}

struct Captured {
  std::vector<std::string> lines;
  Logger logger() {
    return Logger(LogLevel::kWarning,
                  [this](LogLevel, std::string_view line) { lines.emplace_back(line); });
  }
};

TEST(SystemTierTest, ExactFileFirstThenArchWide) {
  TempFolder dir;
  Entry in_exact = entry_named("exact");
  Entry in_arch = entry_named("arch");
  write_package(dir / "gfx906_60.kdb", {in_exact});
  write_package(dir / "gfx906.kdb", {in_arch});
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  DbNames names{"gfx906_60", "gfx906"};
  EXPECT_TRUE(tier->get(names, in_exact.key)->has_value());
  EXPECT_TRUE(tier->get(names, in_arch.key)->has_value());
  EXPECT_FALSE(tier->get(names, entry_named("none").key)->has_value());
  EXPECT_TRUE(captured.lines.empty());
}

TEST(SystemTierTest, MissingPackageWarnsOncePerProcessAndFile) {
  TempFolder dir;
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  // A name no other test uses, since the warning is once per process.
  DbNames names{"sm_77_5", "sm_77"};
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(tier->get(names, entry_named("x").key)->has_value());
  auto again = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_FALSE(again->get(names, entry_named("x").key)->has_value());
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0],
            "kcache: Warning [SystemDb] Missing system database file: sm_77_5.kdb Performance may "
            "degrade");
}

TEST(SystemTierTest, ArchWidePackageAloneIsEnough) {
  TempFolder dir;
  Entry entry = entry_named("a");
  write_package(dir / "sm_78.kdb", {entry});
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"sm_78_132", "sm_78"}, entry.key)->has_value());
  EXPECT_TRUE(captured.lines.empty());
}

// A running program takes up a package installed later: one where none
// was, and one renamed over a package that could not be used (an audit's
// long-running program compiled every request after a truncated package
// was replaced by a good one). `recheck` 0: every lookup looks.
TEST(SystemTierTest, APackageInstalledLaterIsTakenUp) {
  TempFolder dir;
  Entry entry = entry_named("later");
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier =
      make_system_tier(dir.path(), {}, Env::posix(), log, events, std::chrono::milliseconds(0));
  const DbNames names{"sm_79_7", "sm_79"};
  EXPECT_FALSE(tier->get(names, entry.key)->has_value());
  write_package(dir / "sm_79.kdb.tmp", {entry});
  std::filesystem::rename(dir / "sm_79.kdb.tmp", dir / "sm_79.kdb");
  EXPECT_TRUE(tier->get(names, entry.key)->has_value()) << "installed where none was";

  // Cut short in place: unusable, then a whole one renamed over it.
  std::filesystem::resize_file(dir / "sm_79.kdb", 40);
  EXPECT_FALSE(tier->get(names, entry.key)->has_value());
  EXPECT_FALSE(tier->get(names, entry.key)->has_value());
  write_package(dir / "sm_79.kdb.tmp", {entry});
  std::filesystem::rename(dir / "sm_79.kdb.tmp", dir / "sm_79.kdb");
  EXPECT_TRUE(tier->get(names, entry.key)->has_value()) << "renamed over a cut one";

  // A drop-in added beside it.
  Entry more = entry_named("more");
  std::filesystem::create_directory(dir / "sm_79.kdb.d");
  write_package(dir / "sm_79.kdb.d/lib.kdb", {more});
  EXPECT_TRUE(tier->get(names, more.key)->has_value()) << "a drop-in added";
}

// Looked at again only after `recheck`: a lookup within it keeps what was
// opened (no stat on the way of every hit).
TEST(SystemTierTest, ThePackagesAreLookedAtAgainOnlyAfterTheRecheckTime) {
  TempFolder dir;
  Entry entry = entry_named("soon");
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events, std::chrono::hours(1));
  const DbNames names{"sm_76_7", "sm_76"};
  EXPECT_FALSE(tier->get(names, entry.key)->has_value());
  write_package(dir / "sm_76.kdb", {entry});
  EXPECT_FALSE(tier->get(names, entry.key)->has_value()) << "looked again within the hour";
}

// A package that exists but cannot be used is treated as absent, with one
// warning naming the file and the reason and never "Missing ...": damage is
// reported as corruption (TierEvents, whose warning the cache gives), a
// file that cannot be read is said by the tier. The arch-wide package is
// still used, and nothing in the folder is touched.
struct BadPackage {
  std::string name;
  std::function<void(const std::string& path)> make;
  bool corrupt;  // reported through TierEvents, else logged by the tier
};

std::vector<BadPackage> bad_packages() {
  auto good_bytes = [] {
    TempFolder scratch;
    write_package(scratch / "p.kdb", {entry_named("a"), entry_named("b")});
    return testing::read_file(scratch / "p.kdb");
  };
  return {
      {"garbage", [](const std::string& p) { testing::write_file(p, "this is not a package"); },
       true},
      {"zero-length", [](const std::string& p) { testing::write_file(p, ""); }, true},
      {"truncated",
       [good_bytes](const std::string& p) {
         std::string bytes = good_bytes();
         testing::write_file(p, bytes.substr(0, bytes.size() - 7));
       },
       true},
      {"zeroed index",
       [good_bytes](const std::string& p) {
         std::string bytes = good_bytes();
         std::fill(bytes.end() - 120, bytes.end() - 20, '\0');
         testing::write_file(p, bytes);
       },
       true},
      {"flipped header bit",
       [good_bytes](const std::string& p) {
         std::string bytes = good_bytes();
         bytes[20] ^= 0x04;
         testing::write_file(p, bytes);
       },
       true},
      {"a user index in its place",
       [](const std::string& p) {
         testing::write_file(p, std::string("SQLite format 3\0", 16) + std::string(4080, 'x'));
       },
       true},
      {"a folder", [](const std::string& p) { std::filesystem::create_directories(p + "/x"); },
       false},
  };
}

TEST(SystemTierTest, UnusablePackageIsAbsentWithOneWarning) {
  for (const auto& bad : bad_packages()) {
    SCOPED_TRACE(bad.name);
    TempFolder dir;
    // Names no other test uses, since warnings are once per process and file.
    const std::string exact = "gfx942_" + std::to_string(std::hash<std::string>{}(bad.name) % 997);
    bad.make(dir / (exact + ".kdb"));
    Entry in_arch = entry_named("arch");
    write_package(dir / "gfx942.kdb", {in_arch});
    const std::string path = dir / (exact + ".kdb");
    const std::string before = bad.corrupt ? testing::read_file(path) : "";
    Captured captured;
    Logger log = captured.logger();
    NullEvents events;
    auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
    for (int i = 0; i < 3; ++i) {
      auto got = tier->get({exact, "gfx942"}, entry_named("x").key);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_FALSE(got->has_value());
      EXPECT_TRUE(tier->get({exact, "gfx942"}, in_arch.key)->has_value());
    }
    if (bad.corrupt) {
      EXPECT_TRUE(captured.lines.empty()) << captured.lines[0];
      EXPECT_EQ(events.count, 1);
    } else {
      ASSERT_EQ(captured.lines.size(), 1u);
      EXPECT_NE(captured.lines[0].find("[SystemDb] System database file " + dir / exact + ".kdb" +
                                       " is unreadable and is ignored: "),
                std::string::npos)
          << captured.lines[0];
      EXPECT_EQ(events.count, 0);
    }
    for (const auto& line : captured.lines) {
      EXPECT_EQ(line.find("Missing system database"), std::string::npos) << line;
    }
    if (bad.corrupt) {
      EXPECT_EQ(testing::read_file(path), before);
    }

    // verify lists it, and cannot repair it (a package is never touched).
    for (bool repair : {false, true}) {
      VerifyReport report;
      ASSERT_TRUE(tier->verify(repair, report).is_ok());
      ASSERT_EQ(report.problems.size(), 1u);
      EXPECT_EQ(report.problems[0].path, dir / (exact + ".kdb"));
      EXPECT_FALSE(report.problems[0].repaired);
      EXPECT_EQ(report.entries_ok, 1u);  // the arch-wide package
    }
    EXPECT_TRUE(std::filesystem::exists(dir / (exact + ".kdb")));
  }
}

// ssh's StrictModes (env/trusted_path.h): a package in a folder others
// can write in is refused with one warning saying why, never a "missing"
// one; verify lists it; closed again, it is served.
TEST(SystemTierTest, PackageOthersCouldWriteIsRefusedWithOneWarning) {
  TempFolder dir;
  Entry entry = entry_named("e");
  write_package(dir / "sm_53.kdb", {entry});
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  for (int i = 0; i < 3; ++i) {
    auto got = tier->get({"sm_53", "sm_53"}, entry.key);
    ASSERT_TRUE(got.is_ok());
    EXPECT_FALSE(got->has_value());
  }
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("System database file " + dir / "sm_53.kdb" +
                                   " is not used: another user could have written it (folder " +
                                   dir.path() + " is writable by others (mode 1777))"),
            std::string::npos)
      << captured.lines[0];
  VerifyReport report;
  ASSERT_TRUE(tier->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].path, dir / "sm_53.kdb");
  EXPECT_EQ(report.entries_ok, 0u);

  ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
  auto closed = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(closed->get({"sm_53", "sm_53"}, entry.key)->has_value());
  EXPECT_EQ(captured.lines.size(), 1u);
}

// EACCES on open and EIO on read, through the Env: one warning naming the
// file and errno's reason, then absent; verify lists it.
TEST(SystemTierTest, UnreadablePackageThroughTheEnvIsAbsentWithOneWarning) {
  for (int err : {EACCES, EIO}) {
    SCOPED_TRACE(std::strerror(err));
    TempFolder dir;
    const std::string exact = "sm_61_" + std::to_string(err);
    Entry entry = entry_named("e");
    write_package(dir / (exact + ".kdb"), {entry});
    testing::FaultEnv env;
    env.inject(err == EACCES ? testing::FaultOp::kOpen : testing::FaultOp::kRead, exact + ".kdb",
               err);
    Captured captured;
    Logger log = captured.logger();
    NullEvents events;
    auto tier = make_system_tier(dir.path(), {}, env, log, events);
    for (int i = 0; i < 3; ++i) {
      auto got = tier->get({exact, "sm_61"}, entry.key);
      ASSERT_TRUE(got.is_ok());
      EXPECT_FALSE(got->has_value());
    }
    ASSERT_EQ(captured.lines.size(), 1u);
    EXPECT_NE(captured.lines[0].find(dir / (exact + ".kdb")), std::string::npos);
    EXPECT_NE(captured.lines[0].find(std::strerror(err)), std::string::npos) << captured.lines[0];
    VerifyReport report;
    ASSERT_TRUE(tier->verify(true, report).is_ok());
    ASSERT_EQ(report.problems.size(), 1u);
    EXPECT_FALSE(report.problems[0].repaired);
  }
}

// A folder that cannot be read (EACCES opening any package, listing it
// too): one warning naming the folder, not one per package the lookups
// ask for (an exact target and its arch), which cannot be told apart.
TEST(SystemTierTest, AFolderThatCannotBeReadIsSaidOnceAsTheFolder) {
  TempFolder dir;
  Entry entry = entry_named("e");
  write_package(dir / "sm_61_28.kdb", {entry});
  testing::FaultEnv env;
  env.inject(testing::FaultOp::kOpen, ".kdb", EACCES);
  env.inject(testing::FaultOp::kList, dir.path(), EACCES);
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, env, log, events);
  for (int i = 0; i < 2; ++i) {
    auto got = tier->get({"sm_61_28", "sm_61"}, entry.key);
    ASSERT_TRUE(got.is_ok());
    EXPECT_FALSE(got->has_value());
  }
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("System database folder " + dir.path() + " cannot be read"),
            std::string::npos)
      << captured.lines[0];
}

// EIO on reading an entry of a package that opened fine: the tier fails
// that lookup (the cache logs it once and goes on), the next key is fine.
TEST(SystemTierTest, ReadErrorAfterOpenFailsTheLookupOnly) {
  TempFolder dir;
  Entry a = entry_named("a");
  Entry b = entry_named("b");
  write_package(dir / "gfx90a.kdb", {a, b});
  testing::FaultEnv env;
  NullEvents events;
  Logger log(LogLevel::kQuiet, {});
  auto tier = make_system_tier(dir.path(), {}, env, log, events);
  ASSERT_TRUE(tier->get({"gfx90a", "gfx90a"}, a.key)->has_value());
  env.inject(testing::FaultOp::kRead, "gfx90a.kdb", EIO);
  auto failed = tier->get({"gfx90a", "gfx90a"}, b.key);
  ASSERT_FALSE(failed.is_ok());
  EXPECT_NE(failed.status().message().find("Input/output error"), std::string::npos);
  env.clear_faults();
  EXPECT_TRUE(tier->get({"gfx90a", "gfx90a"}, b.key)->has_value());
  EXPECT_EQ(events.count, 0);
}

TEST(SystemTierTest, NeverWritesIntoItsFolder) {
  TempFolder dir;
  Entry entry = entry_named("ro");
  write_package(dir / "ro_1.kdb", {entry});
  std::filesystem::permissions(dir / "ro_1.kdb", std::filesystem::perms::owner_read |
                                                     std::filesystem::perms::group_read |
                                                     std::filesystem::perms::others_read);
  NullEvents events;
  Logger log(LogLevel::kQuiet, {});
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"ro_1", "ro"}, entry.key)->has_value());
  EXPECT_FALSE(tier->put("ro_1", entry, {}).is_ok());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"ro_1.kdb"});
}

// KCACHE_TRUSTED_KEYS: only packages signed by a trusted key are served;
// each refused one is said once, never as missing; verify lists them.
class SignedPackagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(dir_.path().c_str(), 0700);
    std::filesystem::create_directories(dir_ / "db");
    ASSERT_TRUE(write_key_pair(dir_ / "trusted", signer_.pair, false, Env::posix()).is_ok());
  }
  std::unique_ptr<Tier> tier(std::vector<std::string> keys) {
    return make_system_tier(dir_ / "db", std::move(keys), Env::posix(), log_, events_);
  }

  TempFolder dir_;
  Captured captured_;
  Logger log_ = captured_.logger();
  NullEvents events_;
  testing::TestSigner signer_ = testing::make_test_signer();
  testing::TestSigner stranger_ = testing::make_test_signer();
  Entry entry_ = entry_named("e");
};

TEST_F(SignedPackagesTest, OnlySignedByATrustedKeyIsServed) {
  write_package(dir_ / "db/signed.kdb", {entry_}, &signer_.signer);
  write_package(dir_ / "db/plain.kdb", {entry_});
  write_package(dir_ / "db/stranger.kdb", {entry_}, &stranger_.signer);
  auto with_keys = tier({dir_ / "trusted.pub"});
  EXPECT_TRUE(with_keys->get({"signed", "signed"}, entry_.key)->has_value());
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(with_keys->get({"plain", "plain"}, entry_.key)->has_value());
    EXPECT_FALSE(with_keys->get({"stranger", "stranger"}, entry_.key)->has_value());
  }
  ASSERT_EQ(captured_.lines.size(), 2u);
  EXPECT_NE(captured_.lines[0].find("plain.kdb is not used: it is not signed"), std::string::npos)
      << captured_.lines[0];
  EXPECT_NE(captured_.lines[1].find("stranger.kdb is not used: it is signed by key " +
                                    key_id(stranger_.pair.public_key)),
            std::string::npos)
      << captured_.lines[1];
  VerifyReport report;
  ASSERT_TRUE(with_keys->verify(false, report).is_ok());
  EXPECT_EQ(report.databases_checked, 3u);
  EXPECT_EQ(report.entries_ok, 1u);
  EXPECT_EQ(report.problems.size(), 2u);

  // Without keys all three are served: a signature is then not asked for.
  auto without = tier({});
  for (const char* db : {"signed", "plain", "stranger"}) {
    EXPECT_TRUE(without->get({db, db}, entry_.key)->has_value()) << db;
  }
}

TEST_F(SignedPackagesTest, AnAlteredEntryIsNeverServed) {
  // The entry swapped for another of the same size with a valid checksum
  // of its own: header, index and signature still hold.
  Entry evil = entry_;
  const std::string other_binary = "f";
  evil.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(other_binary.data()), 1});
  write_package(dir_ / "db/signed.kdb", {entry_}, &signer_.signer);
  write_package(dir_ / "evil.kdb", {evil});
  std::string bytes = testing::read_file(dir_ / "db/signed.kdb");
  const std::string evil_bytes = testing::read_file(dir_ / "evil.kdb");
  const std::size_t size = encode_entry(entry_, Compression::kNone)->size();
  bytes.replace(kKdbHeaderSize, size, evil_bytes.substr(kKdbHeaderSize, size));
  testing::write_file(dir_ / "db/signed.kdb", bytes);
  ::chmod((dir_ / "db/signed.kdb").c_str(), 0644);

  auto with_keys = tier({dir_ / "trusted.pub"});
  for (int i = 0; i < 2; ++i) {
    auto got = with_keys->get({"signed", "signed"}, entry_.key);
    ASSERT_TRUE(got.is_ok());
    EXPECT_FALSE(got->has_value());
  }
  EXPECT_EQ(events_.count, 1);  // one report for the package
  VerifyReport report;
  ASSERT_TRUE(with_keys->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].problem.find("not the one its package was signed with"),
            std::string::npos)
      << report.problems[0].problem;
}

// A signed package one entry of which is not as signed was altered after
// signing: once that is seen, none of its entries is served (as for a
// signature that fails), with one report; what was served before was each
// entry as signed.
TEST_F(SignedPackagesTest, AnAlteredEntryRefusesItsWholePackage) {
  const Entry intact = entry_named("intact");
  Entry evil = entry_;
  const std::string other_binary = "f";
  evil.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(other_binary.data()), 1});
  write_package(dir_ / "db/signed.kdb", {entry_, intact}, &signer_.signer);
  std::string bytes = testing::read_file(dir_ / "db/signed.kdb");
  const auto encoded = encode_entry(entry_, Compression::kNone);
  const auto evil_encoded = encode_entry(evil, Compression::kNone);
  ASSERT_TRUE(encoded.is_ok() && evil_encoded.is_ok());
  ASSERT_EQ(encoded->size(), evil_encoded->size());
  const std::size_t at = bytes.find(std::string(encoded->begin(), encoded->end()));
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, evil_encoded->size(), std::string(evil_encoded->begin(), evil_encoded->end()));
  testing::write_file(dir_ / "db/signed.kdb", bytes);
  ::chmod((dir_ / "db/signed.kdb").c_str(), 0644);

  auto with_keys = tier({dir_ / "trusted.pub"});
  EXPECT_TRUE(with_keys->get({"signed", "signed"}, intact.key)->has_value());
  EXPECT_FALSE(with_keys->get({"signed", "signed"}, entry_.key)->has_value());
  EXPECT_FALSE(with_keys->get({"signed", "signed"}, intact.key)->has_value());
  EXPECT_FALSE(with_keys->get({"signed", "signed"}, entry_.key)->has_value());
  EXPECT_EQ(events_.count, 1);

  // Without keys the signature is not asked for: each entry stands on its
  // own checksum, and the intact one is served.
  auto without = tier({});
  EXPECT_TRUE(without->get({"signed", "signed"}, intact.key)->has_value());
}

TEST_F(SignedPackagesTest, ASignatureLiftsTheOwnershipRule) {
  write_package(dir_ / "db/signed.kdb", {entry_}, &signer_.signer);
  write_package(dir_ / "db/plain.kdb", {entry_});
  ASSERT_EQ(::chmod((dir_ / "db").c_str(), 0777), 0);
  auto with_keys = tier({dir_ / "trusted.pub"});
  auto first = with_keys->get({"signed", "signed"}, entry_.key);
  auto second = with_keys->get({"signed", "signed"}, entry_.key);
  ASSERT_TRUE(first.is_ok() && first->has_value());
  ASSERT_TRUE(second.is_ok() && second->has_value());
  // Copied out, not lent from a mapping of a file others can write.
  EXPECT_NE((*first)->payload().data(), (*second)->payload().data());
  EXPECT_FALSE(with_keys->get({"plain", "plain"}, entry_.key)->has_value());
  EXPECT_FALSE(tier({})->get({"signed", "signed"}, entry_.key)->has_value());

  // Others could change the file, so every read is checked: an entry
  // rewritten in place (same inode, its own checksum made right) after it
  // was served is refused the next time.
  Entry evil = entry_;
  evil.storage = ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>("f"), 1});
  write_package(dir_ / "evil.kdb", {evil});
  const std::string evil_bytes = testing::read_file(dir_ / "evil.kdb");
  const std::size_t size = encode_entry(entry_, Compression::kNone)->size();
  {
    std::fstream file(dir_ / "db/signed.kdb", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(kKdbHeaderSize);
    file.write(evil_bytes.data() + kKdbHeaderSize, static_cast<std::streamsize>(size));
  }
  const int corrupt_before = events_.count;
  EXPECT_FALSE(with_keys->get({"signed", "signed"}, entry_.key)->has_value());
  EXPECT_EQ(events_.count, corrupt_before + 1);
  ASSERT_EQ(::chmod((dir_ / "db").c_str(), 0755), 0);
}

TEST_F(SignedPackagesTest, KeysThatCannotBeReadRefuseEveryPackage) {
  write_package(dir_ / "db/signed.kdb", {entry_}, &signer_.signer);
  testing::write_file(dir_ / "bad.pub", "not a key\n");
  auto with_bad_keys = tier({dir_ / "bad.pub", dir_ / "absent.pub"});
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(with_bad_keys->get({"signed", "signed"}, entry_.key)->has_value());
  }
  // Each key problem once, then the refusal once.
  ASSERT_EQ(captured_.lines.size(), 3u);
  EXPECT_NE(captured_.lines[0].find("Trusted key file " + dir_ / "bad.pub" + " is not used"),
            std::string::npos)
      << captured_.lines[0];
  EXPECT_NE(captured_.lines[1].find("absent.pub"), std::string::npos) << captured_.lines[1];
  EXPECT_NE(captured_.lines[2].find("signed.kdb is not used"), std::string::npos);
}

// A package packed by another toolchain is passed over for that compiler,
// said once; for its own compiler it is served.
TEST(SystemTierTest, PackageOfAnotherToolchainIsSaidOnceAndPassedOver) {
  TempFolder dir;
  Entry entry = entry_named("e");
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded{
      {entry.key, *encode_entry(entry, Compression::kNone)}};
  const CompilerIdentity packer{"command", "cc", "1.0"};
  const CompilerIdentity newer{"command", "cc", "2.0"};
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "sm_53.kdb", encoded,
                        {{"db", "sm_53"}, {"compiler", "command | cc | 1.0"}})
                  .is_ok());
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"sm_53", "sm_53", &packer}, entry.key)->has_value());
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(tier->get({"sm_53", "sm_53", &newer}, entry.key)->has_value());
  }
  EXPECT_TRUE(tier->get({"sm_53", "sm_53", &packer}, entry.key)->has_value());
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("is not used for this compiler: it was packed by another "
                                   "command toolchain (packed with '1.0', here '2.0')"),
            std::string::npos)
      << captured.lines[0];
}

// A database's drop-ins (<db>.kdb.d/*.kdb, design.md §3.6): asked after
// <db>.kdb, in the byte order of their names, for the exact database and
// then the arch-wide one; hidden files and other names are no packages.
Entry entry_holding(const std::string& name, const std::string& payload) {
  Entry entry = entry_named(name);
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()});
  entry.payload_size = payload.size();
  return entry;
}

std::string payload_of(const Result<std::optional<Entry>>& got) {
  if (!got.is_ok() || !got->has_value()) return "(none)";
  auto bytes = (*got)->payload();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(SystemTierTest, DropInsAreAskedAfterThePackageInNameOrder) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_70.kdb.d");
  write_package(dir / "sm_70.kdb", {entry_holding("shared", "from sm_70.kdb")});
  write_package(dir / "sm_70.kdb.d/b-lib.kdb",
                {entry_holding("shared", "from b-lib"), entry_holding("both", "from b-lib"),
                 entry_holding("b", "b's own")});
  write_package(dir / "sm_70.kdb.d/a-lib.kdb",
                {entry_holding("both", "from a-lib"), entry_holding("a", "a's own")});
  std::filesystem::create_directories(dir / "sm_70_80.kdb.d");
  write_package(dir / "sm_70_80.kdb.d/z.kdb", {entry_holding("exact", "exact's drop-in")});
  // Not packages: an install's temporary, another kind of file.
  testing::write_file(dir / "sm_70.kdb.d/.c-lib.kdb", "half a package");
  testing::write_file(dir / "sm_70.kdb.d/README", "not a package");
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  const DbNames names{"sm_70_80", "sm_70"};
  EXPECT_EQ(payload_of(tier->get(names, entry_named("shared").key)), "from sm_70.kdb");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("both").key)), "from a-lib");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("a").key)), "a's own");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("b").key)), "b's own");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("exact").key)), "exact's drop-in");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("none").key)), "(none)");
  EXPECT_TRUE(captured.lines.empty()) << captured.lines[0];

  VerifyReport report;
  ASSERT_TRUE(tier->verify(false, report).is_ok());
  EXPECT_TRUE(report.problems.empty()) << report.problems[0].path;
  EXPECT_EQ(report.databases_checked, 4u);  // sm_70.kdb, two drop-ins, and sm_70_80's one
  EXPECT_EQ(report.entries_ok, 7u);
}

// A database with drop-ins alone is not missing: no warning.
TEST(SystemTierTest, DropInsAloneAreEnough) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_71.kdb.d");
  write_package(dir / "sm_71.kdb.d/lib.kdb", {entry_named("a")});
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"sm_71_9", "sm_71"}, entry_named("a").key)->has_value());
  EXPECT_FALSE(tier->get({"sm_71_9", "sm_71"}, entry_named("b").key)->has_value());
  EXPECT_TRUE(captured.lines.empty()) << captured.lines[0];
  auto names = tier->databases();
  ASSERT_TRUE(names.is_ok());
  EXPECT_EQ(*names, std::vector<std::string>{"sm_71"});
}

// Each drop-in is held to the rules a package is: one others could write
// is refused with one warning, one of another database (moved into this
// one's folder) is passed over, said once; the others are served.
TEST(SystemTierTest, ADropInIsTrustedAndFittedAsAPackageIs) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_72.kdb.d");
  write_package(dir / "sm_72.kdb.d/good.kdb", {entry_named("good")});
  write_package(dir / "sm_72.kdb.d/open.kdb", {entry_named("open")});
  ASSERT_EQ(::chmod((dir / "sm_72.kdb.d/open.kdb").c_str(), 0666), 0);
  Entry moved = entry_named("moved");
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "sm_72.kdb.d/moved.kdb",
                        {{moved.key, *encode_entry(moved, Compression::kNone)}},
                        {{"db", "sm_90"}, {"compiler", "command | cc | 1.0"}})
                  .is_ok());
  const CompilerIdentity compiler{"command", "cc", "1.0"};
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  const DbNames names{"sm_72", "sm_72", &compiler};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(tier->get(names, entry_named("good").key)->has_value());
    EXPECT_FALSE(tier->get(names, entry_named("open").key)->has_value());
    EXPECT_FALSE(tier->get(names, moved.key)->has_value());
  }
  ASSERT_EQ(captured.lines.size(), 2u);
  EXPECT_NE(captured.lines[0].find(dir / "sm_72.kdb.d/open.kdb" +
                                   " is not used: another user could have written it"),
            std::string::npos)
      << captured.lines[0];
  EXPECT_NE(captured.lines[1].find(dir / "sm_72.kdb.d/moved.kdb" +
                                   " is not used: it holds kernels for sm_90"),
            std::string::npos)
      << captured.lines[1];
  VerifyReport report;
  ASSERT_TRUE(tier->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_EQ(report.problems[0].path, dir / "sm_72.kdb.d/moved.kdb");
  EXPECT_EQ(report.problems[1].path, dir / "sm_72.kdb.d/open.kdb");
}

// Two libraries' packages for one target, packed by two toolchains: the
// one that serves this compiler is used, and the other is not warned of
// (it serves its own library's programs); a compiler neither serves hears
// of both.
TEST(SystemTierTest, APackageOfAnotherToolchainBesideOneThatServesIsNotWarnedOf) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_75.kdb.d");
  Entry one = entry_named("one");
  Entry two = entry_named("two");
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "sm_75.kdb.d/lib1.kdb",
                        {{one.key, *encode_entry(one, Compression::kNone)}},
                        {{"db", "sm_75"}, {"compiler", "command | cc | 1.0"}})
                  .is_ok());
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "sm_75.kdb.d/lib2.kdb",
                        {{two.key, *encode_entry(two, Compression::kNone)}},
                        {{"db", "sm_75"}, {"compiler", "command | cc | 2.0"}})
                  .is_ok());
  const CompilerIdentity first{"command", "cc", "1.0"};
  const CompilerIdentity second{"command", "cc", "2.0"};
  const CompilerIdentity third{"command", "cc", "3.0"};
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(tier->get({"sm_75", "sm_75", &second}, two.key)->has_value());
    EXPECT_FALSE(tier->get({"sm_75", "sm_75", &second}, one.key)->has_value());
    EXPECT_TRUE(tier->get({"sm_75", "sm_75", &first}, one.key)->has_value());
  }
  EXPECT_TRUE(captured.lines.empty()) << captured.lines[0];
  EXPECT_FALSE(tier->get({"sm_75", "sm_75", &third}, one.key)->has_value());
  ASSERT_EQ(captured.lines.size(), 2u);
  EXPECT_NE(captured.lines[0].find("lib1.kdb is not used for this compiler"), std::string::npos);
  EXPECT_NE(captured.lines[1].find("lib2.kdb is not used for this compiler"), std::string::npos);
}

// A drop-in folder others can write refuses every package in it: said
// once, as the folder, not once per package.
TEST(SystemTierTest, ADropInFolderOthersCanWriteIsSaidOnce) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_76.kdb.d");
  for (const char* name : {"a", "b", "c"}) {
    write_package(dir / "sm_76.kdb.d/" + name + ".kdb", {entry_named(name)});
  }
  ASSERT_EQ(::chmod((dir / "sm_76.kdb.d").c_str(), 0777), 0);
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  for (const char* name : {"a", "b", "c"}) {
    EXPECT_FALSE(tier->get({"sm_76", "sm_76"}, entry_named(name).key)->has_value());
  }
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("(folder " + dir / "sm_76.kdb.d" +
                                   " is writable by others (mode 0777)); fix the owner or mode, "
                                   "or remove it (as is any other package beneath that folder)"),
            std::string::npos)
      << captured.lines[0];
}

// A folder of more drop-ins than a target has libraries: the first 64 in
// name order are used (each is held open for the process), said once.
TEST(SystemTierTest, AtMost64DropInsAreUsed) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_77.kdb.d");
  for (int i = 0; i < 66; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%03d", i);
    write_package(dir / "sm_77.kdb.d/" + name + ".kdb", {entry_named(name)});
  }
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"sm_77", "sm_77"}, entry_named("p000").key)->has_value());
  EXPECT_TRUE(tier->get({"sm_77", "sm_77"}, entry_named("p063").key)->has_value());
  EXPECT_FALSE(tier->get({"sm_77", "sm_77"}, entry_named("p064").key)->has_value());
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("holds 66 packages; the first 64 in name order are used"),
            std::string::npos)
      << captured.lines[0];
}

// A drop-in replaced while in use (renamed over, as kcache install does)
// is taken up quietly by the next lookup.
TEST(SystemTierTest, ADropInReplacedIsOpenedAnew) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_73.kdb.d");
  write_package(dir / "sm_73.kdb.d/lib.kdb", {entry_holding("k", "first")});
  write_package(dir / "sm_73.kdb.d/other.kdb", {entry_named("o")});
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  const DbNames names{"sm_73", "sm_73"};
  EXPECT_EQ(payload_of(tier->get(names, entry_named("k").key)), "first");
  write_package(dir / "new.kdb", {entry_holding("k", "second")});
  std::filesystem::rename(dir / "new.kdb", dir / "sm_73.kdb.d/lib.kdb");
  EXPECT_EQ(payload_of(tier->get(names, entry_named("k").key)), "second");
  EXPECT_TRUE(tier->get(names, entry_named("o").key)->has_value());
  EXPECT_TRUE(captured.lines.empty()) << captured.lines[0];
}

// A drop-in folder that cannot be listed: one warning naming it; the
// database's own package is still served.
TEST(SystemTierTest, ADropInFolderThatCannotBeReadIsSaidOnce) {
  TempFolder dir;
  write_package(dir / "sm_74.kdb", {entry_named("a")});
  testing::write_file(dir / "sm_74.kdb.d", "a file, not a folder");
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), {}, Env::posix(), log, events);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(tier->get({"sm_74", "sm_74"}, entry_named("a").key)->has_value());
  }
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("drop-in folder " + dir / "sm_74.kdb.d" +
                                   " is not a folder; its packages are not used"),
            std::string::npos)
      << captured.lines[0];
  VerifyReport report;
  ASSERT_TRUE(tier->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].path, dir / "sm_74.kdb.d");
}

}  // namespace
}  // namespace kcache
