#include "store/system/system_tier.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fakes/temp_folder.h"
#include "format/hash.h"
#include "format/kdb_file.h"

namespace kcache {
namespace {

using testing::TempFolder;

class NullEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string&, const Status&) override { ++count; }
  int count = 0;
};

Entry entry_named(const std::string& name) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(sha256(entry.material));
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(name.data()), name.size()});
  entry.payload_size = name.size();
  return entry;
}

void write_package(const std::string& path, const std::vector<Entry>& entries) {
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  for (const auto& e : entries) encoded.emplace_back(e.key, *encode_entry(e, Compression::kNone));
  ASSERT_TRUE(write_kdb(Env::posix(), path, encoded, {}).is_ok());
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
  auto tier = make_system_tier(dir.path(), Env::posix(), log, events);
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
  auto tier = make_system_tier(dir.path(), Env::posix(), log, events);
  // A name no other test uses, since the warning is once per process.
  DbNames names{"sm_77_5", "sm_77"};
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(tier->get(names, entry_named("x").key)->has_value());
  auto again = make_system_tier(dir.path(), Env::posix(), log, events);
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
  auto tier = make_system_tier(dir.path(), Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"sm_78_132", "sm_78"}, entry.key)->has_value());
  EXPECT_TRUE(captured.lines.empty());
}

TEST(SystemTierTest, UnreadablePackageSaysSoInsteadOfMissing) {
  TempFolder dir;
  testing::write_file(dir / "gfx942_304.kdb", "this is not a package");
  Captured captured;
  Logger log = captured.logger();
  NullEvents events;
  auto tier = make_system_tier(dir.path(), Env::posix(), log, events);
  auto got = tier->get({"gfx942_304", "gfx942"}, entry_named("x").key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FALSE(got->has_value());
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("is unreadable and is ignored"), std::string::npos);
  EXPECT_EQ(events.count, 1);
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
  auto tier = make_system_tier(dir.path(), Env::posix(), log, events);
  EXPECT_TRUE(tier->get({"ro_1", "ro"}, entry.key)->has_value());
  EXPECT_FALSE(tier->put("ro_1", entry, {}).is_ok());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"ro_1.kdb"});
}

}  // namespace
}  // namespace kcache
