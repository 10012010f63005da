#include "format/kdb_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fakes/temp_folder.h"
#include "format/entry.h"
#include "format/hash.h"

namespace kcache {
namespace {

using testing::TempFolder;

std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> make_entries(int count) {
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> entries;
  for (int i = 0; i < count; ++i) {
    Entry entry;
    entry.material = "n " + std::to_string(i) + "\n";
    entry.key = CacheKey(sha256(entry.material));
    std::string payload(100 + i, static_cast<char>('a' + i % 26));
    entry.storage = ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(payload.data()),
                                         payload.size()});
    entry.payload_size = payload.size();
    entries.emplace_back(entry.key, *encode_entry(entry, Compression::kNone));
  }
  return entries;
}

TEST(KdbFileTest, WriteThenFindEveryEntry) {
  TempFolder dir;
  auto entries = make_entries(50);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", entries, {{"db", "x"}}).is_ok());
  EXPECT_EQ(std::filesystem::status(dir / "x.kdb").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::others_read);
  auto reader = KdbReader::open(dir / "x.kdb", Env::posix());
  ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
  EXPECT_EQ((*reader)->slots().size(), 50u);
  EXPECT_EQ((*reader)->metadata(), (Fields{{"db", "x"}}));
  for (const auto& [key, bytes] : entries) {
    auto slot = (*reader)->find(key);
    ASSERT_TRUE(slot.has_value());
    auto read = (*reader)->read(*slot);
    ASSERT_TRUE(read.is_ok());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), read->span().begin(), read->span().end()));
    EXPECT_TRUE(decode_entry(*read, &key).is_ok());
  }
  EXPECT_FALSE((*reader)->find(CacheKey(sha256(std::string_view("absent")))).has_value());
}

TEST(KdbFileTest, EmptyPackageIsValid) {
  TempFolder dir;
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "e.kdb", {}, {}).is_ok());
  auto reader = KdbReader::open(dir / "e.kdb", Env::posix());
  ASSERT_TRUE(reader.is_ok());
  EXPECT_TRUE((*reader)->slots().empty());
}

TEST(KdbFileTest, DuplicateKeysAreRefused) {
  TempFolder dir;
  auto entries = make_entries(2);
  entries.push_back(entries[0]);
  EXPECT_EQ(write_kdb(Env::posix(), dir / "d.kdb", entries, {}).code(),
            StatusCode::kInvalidArgument);
}

TEST(KdbFileTest, MissingFileIsNotFound) {
  TempFolder dir;
  EXPECT_EQ(KdbReader::open(dir / "none.kdb", Env::posix()).status().code(), StatusCode::kNotFound);
}

TEST(KdbFileTest, DamageToHeaderOrIndexIsCorruption) {
  TempFolder dir;
  auto entries = make_entries(5);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", entries, {{"db", "x"}}).is_ok());
  const std::string good = testing::read_file(dir / "x.kdb");
  // Flip a byte in the header, in the index (the last 48*5 + meta bytes),
  // truncate, and replace with garbage.
  std::vector<std::string> damaged;
  for (std::size_t at : {std::size_t{0}, std::size_t{20}, good.size() - 30, good.size() - 1}) {
    std::string bad = good;
    bad[at] ^= 0x40;
    damaged.push_back(bad);
  }
  damaged.push_back(good.substr(0, good.size() - 10));
  damaged.push_back(good.substr(0, 10));
  damaged.push_back(std::string(good.size(), '\0'));
  damaged.push_back("SQLite format 3" + std::string(1000, '\0'));
  for (std::size_t i = 0; i < damaged.size(); ++i) {
    testing::write_file(dir / "bad.kdb", damaged[i]);
    auto reader = KdbReader::open(dir / "bad.kdb", Env::posix());
    ASSERT_FALSE(reader.is_ok()) << "damage #" << i;
    EXPECT_EQ(reader.status().code(), StatusCode::kCorruption) << "damage #" << i;
  }
}

}  // namespace
}  // namespace kcache
