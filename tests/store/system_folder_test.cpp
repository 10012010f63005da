#include "store/system/system_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "base/hash.h"
#include "fakes/counting_events.h"
#include "fakes/temp_folder.h"
#include "fakes/test_signer.h"
#include "format/entry.h"
#include "format/kdb_file.h"
#include "sign/key_file.h"
#include "store/system/system_tier.h"

namespace kcache {
namespace {

using testing::TempFolder;

Entry entry_named(const std::string& name) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(name.data()), name.size()});
  entry.payload_size = name.size();
  return entry;
}

void write_package(const std::string& path, const Fields& metadata = {},
                   const KdbSigner* signer = nullptr) {
  const Entry entry = entry_named(path);
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  encoded.emplace_back(entry.key, *encode_entry(entry, Compression::kNone));
  ASSERT_TRUE(write_kdb(Env::posix(), path, encoded, metadata, signer).is_ok());
}

// The items of `described` by name, and their order.
struct Items {
  explicit Items(const SystemFolder& described) {
    for (const auto& item : described.items) {
      names.push_back(item.name);
      by_name[item.name] = item;
    }
  }
  std::vector<std::string> names;
  std::map<std::string, SystemFolderItem> by_name;
};

// A folder as an installer, a hand or an accident leaves it: what the tier
// uses, and each other thing with why not, by database, each database's
// own package first; names that are not packages' are not listed.
TEST(SystemFolderTest, SaysWhatTheTierUsesAndWhyNot) {
  TempFolder dir;
  write_package(dir / "gfx906.kdb");
  std::filesystem::create_directories(dir / "gfx906.kdb.d/d-folder.kdb");
  write_package(dir / "gfx906.kdb.d/a.kdb");
  std::filesystem::create_symlink(dir / "gfx906.kdb.d/a.kdb", dir / "gfx906.kdb.d/b-link.kdb");
  ASSERT_EQ(::mkfifo((dir / "gfx906.kdb.d/c-fifo.kdb").c_str(), 0644), 0);
  write_package(dir / "gfx906.kdb.d/.installing.kdb");  // an install's temporary
  testing::write_file(dir / "gfx906.kdb.d/notes.txt", "not named as a package");
  testing::write_file(dir / "README", "not named as a package");
  write_package(dir / "open.kdb");
  ASSERT_EQ(::chmod((dir / "open.kdb").c_str(), 0666), 0);
  std::filesystem::create_symlink(dir / "gfx906.kdb", dir / "linked.kdb");
  write_package(dir / "renamed.kdb", {{"db", "sm_90"}});
  testing::write_file(dir / "damaged.kdb", "not a package");
  testing::write_file(dir / "sm_80.kdb.d", "a file, not a folder");

  const SystemFolder described = describe_system_folder(dir.path(), {});
  EXPECT_EQ(described.problem, "");
  const Items items(described);
  EXPECT_EQ(items.names,
            (std::vector<std::string>{"damaged.kdb", "gfx906.kdb", "gfx906.kdb.d/a.kdb",
                                      "gfx906.kdb.d/b-link.kdb", "gfx906.kdb.d/c-fifo.kdb",
                                      "gfx906.kdb.d/d-folder.kdb", "linked.kdb", "open.kdb",
                                      "renamed.kdb", "sm_80.kdb.d"}));
  auto item = [&](const std::string& name) { return items.by_name.at(name); };
  for (const char* used : {"gfx906.kdb", "gfx906.kdb.d/a.kdb"}) {
    EXPECT_TRUE(item(used).used()) << used << ": " << item(used).why_not_used;
    EXPECT_TRUE(item(used).opened) << used;
    EXPECT_EQ(item(used).db, "gfx906") << used;
  }
  EXPECT_EQ(item("gfx906.kdb.d/a.kdb").path, dir / "gfx906.kdb.d/a.kdb");
  // Named as drop-ins, not package files: never opened.
  const std::map<std::string, std::string> not_files = {
      {"gfx906.kdb.d/b-link.kdb", "a symbolic link, which is not followed"},
      {"gfx906.kdb.d/c-fifo.kdb", "not a regular file (a FIFO, socket or device)"},
      {"gfx906.kdb.d/d-folder.kdb", "a folder, not a package file"},
      {"sm_80.kdb.d", "a drop-in folder that is not a folder; its packages are not used"}};
  for (const auto& [name, why] : not_files) {
    EXPECT_FALSE(item(name).opened) << name;
    EXPECT_NE(item(name).why_not_used.find(why), std::string::npos)
        << name << ": " << item(name).why_not_used;
  }
  EXPECT_EQ(item("sm_80.kdb.d").db, "sm_80");
  // Opened, and not used: the package itself is the reason.
  const std::map<std::string, std::string> refused = {
      {"open.kdb", "another user could have written it"},
      {"linked.kdb", "symbolic link"},
      {"renamed.kdb", "it holds kernels for sm_90, not renamed"},
      {"damaged.kdb", "damaged.kdb"}};
  for (const auto& [name, why] : refused) {
    EXPECT_TRUE(item(name).opened) << name;
    EXPECT_FALSE(item(name).used()) << name;
    EXPECT_NE(item(name).why_not_used.find(why), std::string::npos)
        << name << ": " << item(name).why_not_used;
  }
}

// Past the first 64 drop-ins of a database (in name order), one is not
// used, and said so in the words the tier's verify uses.
TEST(SystemFolderTest, ADropInPastTheFirst64IsNotUsed) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "sm_77.kdb.d");
  for (int i = 0; i < 65; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%03d.kdb", i);
    write_package(dir / "sm_77.kdb.d/" + name);
  }
  const Items items(describe_system_folder(dir.path(), {}));
  ASSERT_EQ(items.names.size(), 65u);
  EXPECT_TRUE(items.by_name.at("sm_77.kdb.d/p063.kdb").used());
  const SystemFolderItem& last = items.by_name.at("sm_77.kdb.d/p064.kdb");
  EXPECT_FALSE(last.opened);
  EXPECT_EQ(last.why_not_used, drop_in_not_used_reason("sm_77"));
  EXPECT_NE(last.why_not_used.find("the first 64 drop-ins of sm_77 in name order"),
            std::string::npos);

  // The tier's verify names the same drop-in, for the same reason.
  testing::CountingEvents events;
  Logger quiet(LogLevel::kError, [](LogLevel, std::string_view) {});
  VerifyReport report;
  ASSERT_TRUE(
      make_system_tier(dir.path(), {}, Env::posix(), quiet, events)->verify(false, report).is_ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].path, last.path);
  EXPECT_EQ(report.problems[0].problem, "not used: " + last.why_not_used);
}

// Under trusted keys a package is used when one of them signed it,
// wherever it lies; an unsigned one, or one another key signed, is not.
TEST(SystemFolderTest, UnderTrustedKeysOnlyTheirSignaturesAreUsed) {
  TempFolder dir;
  ::chmod(dir.path().c_str(), 0700);
  const testing::TestSigner trusted = testing::make_test_signer();
  const testing::TestSigner stranger = testing::make_test_signer();
  ASSERT_TRUE(write_key_pair(dir / "trusted", trusted.pair, false, Env::posix()).is_ok());
  std::filesystem::create_directories(dir / "db");
  write_package(dir / "db/signed.kdb", {}, &trusted.signer);
  write_package(dir / "db/plain.kdb");
  write_package(dir / "db/stranger.kdb", {}, &stranger.signer);

  const Items with_keys(describe_system_folder(dir / "db", {dir / "trusted.pub"}));
  EXPECT_TRUE(with_keys.by_name.at("signed.kdb").used());
  EXPECT_EQ(with_keys.by_name.at("plain.kdb").why_not_used,
            "it is not signed, and only packages signed by a trusted key are used");
  EXPECT_NE(with_keys.by_name.at("stranger.kdb")
                .why_not_used.find("signed by key " + key_id(stranger.pair.public_key)),
            std::string::npos);
  // Without keys, each is trusted for its file's owner and mode.
  for (const auto& item : describe_system_folder(dir / "db", {}).items) {
    EXPECT_TRUE(item.used()) << item.name << ": " << item.why_not_used;
  }
}

// When the folder itself is the reason none are listed, it is said.
TEST(SystemFolderTest, AFolderThatListsNoneSaysWhy) {
  TempFolder dir;
  EXPECT_EQ(describe_system_folder(dir / "absent", {}).problem, "no such folder");
  testing::write_file(dir / "a-file", "not a folder");
  EXPECT_EQ(describe_system_folder(dir / "a-file", {}).problem, "not a folder");
  const SystemFolder empty = describe_system_folder(dir.path(), {});
  EXPECT_EQ(empty.problem, "");
  EXPECT_TRUE(empty.items.empty());
}

TEST(SystemFolderTest, PackagePaths) {
  EXPECT_EQ(system_package_path("/s", "gfx90a"), "/s/gfx90a.kdb");
  EXPECT_EQ(system_package_path("/s/", "gfx90a"), "/s/gfx90a.kdb");
  EXPECT_EQ(system_package_path("/s", "gfx90a", "mylib"), "/s/gfx90a.kdb.d/mylib.kdb");
  EXPECT_EQ(drop_in_folder_of("/s", "sm_90"), "/s/sm_90.kdb.d");
  EXPECT_FALSE(system_folder_name("README").has_value());
  EXPECT_FALSE(system_folder_name(".kdb").has_value());
  EXPECT_EQ(system_folder_name("sm_90.kdb")->db, "sm_90");
  EXPECT_TRUE(system_folder_name("sm_90.kdb.d")->drop_in_folder);
}

}  // namespace
}  // namespace kcache
