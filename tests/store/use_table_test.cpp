#include "store/user/use_table.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/hash.h"
#include "fakes/temp_folder.h"

namespace kcache::userlog {
namespace {

using testing::TempFolder;

CacheKey key_named(const std::string& name) { return CacheKey(xxh3_128(name)); }

class UseTableTest : public ::testing::Test {
 protected:
  std::unique_ptr<UseTable> open() {
    auto file = Env::posix().open_file(path_, OpenMode::kReadWrite);
    EXPECT_TRUE(file.is_ok()) << file.status().message();
    if (!file) return nullptr;
    auto table = UseTable::open(std::move(*file), path_);
    EXPECT_TRUE(table.is_ok()) << table.status().message();
    return table ? std::move(*table) : nullptr;
  }
  Status write(std::size_t entries, const std::vector<Use>& uses, std::uint32_t made = 1000) {
    return UseTable::write(Env::posix(), path_, Generation{}, entries, uses, made, 0600);
  }
  Status open_status() {
    auto file = Env::posix().open_file(path_, OpenMode::kReadWrite);
    if (!file) return file.status();
    auto table = UseTable::open(std::move(*file), path_);
    return table ? Status::ok() : table.status();
  }

  TempFolder dir_;
  std::string path_ = dir_ / "db.ukdu";
};

TEST_F(UseTableTest, RecordsTheMinuteOfEachKeysLastUse) {
  ASSERT_TRUE(write(10, {}).is_ok());
  auto table = open();
  ASSERT_TRUE(table);
  EXPECT_EQ(table->made(), 1000u);
  EXPECT_EQ(table->slots(), UseTable::kMinSlots);
  const CacheKey a = key_named("a"), b = key_named("b");
  EXPECT_FALSE(table->last_use(a));
  table->touch(a, 1005);
  table->touch(b, 1001);
  EXPECT_EQ(table->last_use(a), 1005u);
  EXPECT_EQ(table->last_use(b), 1001u);
  // A minute only grows: a process whose clock lags does not set it back.
  table->touch(a, 1003);
  EXPECT_EQ(table->last_use(a), 1005u);
  table->touch(a, 1010);
  EXPECT_EQ(table->last_use(a), 1010u);
}

TEST_F(UseTableTest, EveryMappingSeesTheOthersUsesAndRetirement) {
  ASSERT_TRUE(write(10, {}).is_ok());
  auto one = open(), two = open();  // as two processes map it
  ASSERT_TRUE(one && two);
  const CacheKey a = key_named("a");
  one->touch(a, 2000);
  EXPECT_EQ(two->last_use(a), 2000u);
  EXPECT_FALSE(two->retired());
  one->retire();
  EXPECT_TRUE(two->retired());
}

TEST_F(UseTableTest, AWrittenTableHoldsTheUsesItWasGivenAndGrowsWithTheEntries) {
  std::vector<Use> uses;
  for (int i = 0; i < 1000; ++i) uses.push_back({key_named(std::to_string(i)), 5000u + i});
  ASSERT_TRUE(write(1000, uses, 4000).is_ok());
  auto table = open();
  ASSERT_TRUE(table);
  EXPECT_GE(table->slots(), 2000u);  // at most half full
  EXPECT_FALSE(table->too_full_for(1000));
  EXPECT_TRUE(table->too_full_for(table->slots()));
  for (const Use& use : uses) EXPECT_EQ(table->last_use(use.key), use.minute);
  EXPECT_EQ(table->made(), 4000u);
}

TEST_F(UseTableTest, AFullTableRecordsWhatItCanAndNothingBreaks) {
  ASSERT_TRUE(write(0, {}).is_ok());
  auto table = open();
  ASSERT_TRUE(table);
  int recorded = 0;
  for (int i = 0; i < 3000; ++i) {  // many more keys than slots
    const CacheKey key = key_named(std::to_string(i));
    table->touch(key, 7);
    recorded += table->last_use(key) ? 1 : 0;
  }
  EXPECT_EQ(recorded, static_cast<int>(UseTable::kMinSlots));
}

TEST_F(UseTableTest, WhatIsNotAUseTableIsRefused) {
  ASSERT_TRUE(write(10, {}).is_ok());
  const auto good = std::filesystem::file_size(path_);
  auto rewrite = [&](std::size_t at, std::uint8_t value) {
    ASSERT_TRUE(write(10, {}).is_ok());
    auto file = Env::posix().open_file(path_, OpenMode::kReadWrite);
    ASSERT_TRUE(file.is_ok());
    ASSERT_TRUE((*file)->write_at(at, {&value, 1}).is_ok());
  };
  rewrite(0, 'X');  // magic
  EXPECT_EQ(open_status().code(), StatusCode::kCorruption);
  rewrite(13, 0x55);  // slot count, caught by the header's check
  EXPECT_EQ(open_status().code(), StatusCode::kCorruption);
  ASSERT_TRUE(write(10, {}).is_ok());
  std::filesystem::resize_file(path_, good - 16);  // shorter than its slots
  EXPECT_EQ(open_status().code(), StatusCode::kCorruption);
  std::filesystem::resize_file(path_, 10);  // shorter than its header
  EXPECT_EQ(open_status().code(), StatusCode::kCorruption);
}

TEST_F(UseTableTest, ATableTruncatedWhileMappedDoesNotKillTheProcess) {
  ASSERT_TRUE(write(10, {}).is_ok());
  auto table = open();
  ASSERT_TRUE(table);
  const CacheKey a = key_named("a");
  table->touch(a, 9);
  std::filesystem::resize_file(path_, 0);  // by hand, under the mapping
  table->touch(a, 10);                     // a page of zeros, not SIGBUS
  table->touch(key_named("b"), 10);
  EXPECT_FALSE(table->retired());
}

}  // namespace
}  // namespace kcache::userlog
