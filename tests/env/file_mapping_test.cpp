#include "env/file_mapping.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "env/env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// Three pages of 'a', 'b' and 'c'.
std::string three_pages() {
  return std::string(kPage, 'a') + std::string(kPage, 'b') + std::string(kPage, 'c');
}

std::shared_ptr<const FileMapping> map_file(const std::string& path, std::uint64_t length) {
  auto file = Env::posix().open_random_access(path);
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file) return nullptr;
  auto mapping = (*file)->map(length);
  EXPECT_TRUE(mapping.is_ok()) << mapping.status().message();
  return mapping ? *mapping : nullptr;  // the file is closed here: the mapping stays
}

TEST(FileMappingTest, HoldsTheFileBytesAfterTheFileIsClosed) {
  TempFolder dir;
  testing::write_file(dir / "f", three_pages());
  auto mapping = map_file(dir / "f", 3 * kPage);
  ASSERT_NE(mapping, nullptr);
  const auto bytes = mapping->bytes();
  ASSERT_EQ(bytes.size(), 3 * kPage);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), three_pages());
  EXPECT_FALSE(mapping->damaged());
}

TEST(FileMappingTest, AFileTruncatedBeneathItReadsAsZerosAndIsDamaged) {
  TempFolder dir;
  testing::write_file(dir / "f", three_pages());
  auto mapping = map_file(dir / "f", 3 * kPage);
  ASSERT_NE(mapping, nullptr);
  ASSERT_EQ(::truncate((dir / "f").c_str(), static_cast<off_t>(kPage)), 0);
  const volatile std::uint8_t* bytes = mapping->bytes().data();
  EXPECT_EQ(bytes[0], 'a');  // still in the file
  EXPECT_FALSE(mapping->damaged());
  // Past the end of the file now: without the guard, SIGBUS kills the test.
  EXPECT_EQ(bytes[2 * kPage + 5], 0);
  EXPECT_TRUE(mapping->damaged());
  EXPECT_EQ(bytes[kPage + 1], 0);
  EXPECT_EQ(bytes[kPage - 1], 'a');
}

TEST(FileMappingTest, TwoMappingsOfOneFileAreDamagedApart) {
  TempFolder dir;
  testing::write_file(dir / "f", three_pages());
  testing::write_file(dir / "g", three_pages());
  auto lost = map_file(dir / "f", 3 * kPage);
  auto kept = map_file(dir / "g", 3 * kPage);
  ASSERT_NE(lost, nullptr);
  ASSERT_NE(kept, nullptr);
  ASSERT_EQ(::truncate((dir / "f").c_str(), 0), 0);
  EXPECT_EQ(static_cast<const volatile std::uint8_t*>(lost->bytes().data())[kPage], 0);
  EXPECT_TRUE(lost->damaged());
  EXPECT_FALSE(kept->damaged());
  EXPECT_EQ(kept->bytes()[kPage], 'b');
}

TEST(FileMappingTest, WhenNoRangeCanBeGuardedMappingIsRefusedUntilOneIsFreed) {
  TempFolder dir;
  testing::write_file(dir / "f", three_pages());
  auto file = Env::posix().open_random_access(dir / "f");
  ASSERT_TRUE(file.is_ok());
  std::vector<std::shared_ptr<const FileMapping>> held;
  Status refused = Status::ok();
  for (int i = 0; i < 1000 && refused.is_ok(); ++i) {
    auto mapping = (*file)->map(kPage);
    if (mapping) {
      held.push_back(*mapping);
    } else {
      refused = mapping.status();
    }
  }
  ASSERT_FALSE(refused.is_ok()) << "every one of 1000 mappings was guarded";
  EXPECT_EQ(refused.code(), StatusCode::kNotSupported) << refused.message();
  EXPECT_GE(held.size(), 64u);
  held.pop_back();
  auto again = (*file)->map(kPage);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ((*again)->bytes()[0], 'a');
}

TEST(FileMappingTest, AnEmptyRangeIsNotMapped) {
  TempFolder dir;
  testing::write_file(dir / "f", "x");
  auto file = Env::posix().open_random_access(dir / "f");
  ASSERT_TRUE(file.is_ok());
  EXPECT_EQ((*file)->map(0).status().code(), StatusCode::kNotSupported);
}

}  // namespace
}  // namespace kcache
