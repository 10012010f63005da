// The user tier's log and hint formats (docs/formats.md §3), byte for byte,
// and the scan that reads a log without trusting its hint.
#include "store/user/user_log.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/hash.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"
#include "format/endian.h"
#include "format/entry.h"

namespace kcache::userlog {
namespace {

using testing::TempFolder;

CacheKey key_of(std::uint8_t fill) {
  CacheKey::Bytes bytes;
  bytes.fill(fill);
  return CacheKey(bytes);
}

std::vector<std::uint8_t> entry_bytes(const std::string& name) {
  return *encode_entry(testing::small_entry("kernel " + name + "\n", name), Compression::kNone);
}

TEST(UserLogFormatTest, GoldenHeaders) {
  const Generation generation{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const auto log = encode_header(FileKind::kLog, generation);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(log.data()), 8),
            std::string("KCULOG\0\0", 8));
  EXPECT_EQ(le::get_u32(log.data() + 8), 1u);
  EXPECT_EQ(le::get_u32(log.data() + 12), 0u);
  EXPECT_EQ(std::memcmp(log.data() + 16, generation.data(), 16), 0);
  for (std::size_t i = 32; i < 48; ++i) EXPECT_EQ(log[i], 0) << i;
  const Checksum128 check = xxh3_128(std::span<const std::uint8_t>(log.data(), 48));
  EXPECT_EQ(std::memcmp(log.data() + 48, check.data(), 16), 0);
  EXPECT_EQ(*decode_header(FileKind::kLog, log), generation);

  const auto hint = encode_header(FileKind::kHint, generation);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(hint.data()), 8),
            std::string("KCUHNT\0\0", 8));
  EXPECT_EQ(*decode_header(FileKind::kHint, hint), generation);
  // Each kind refuses the other's header, and any flipped bit.
  EXPECT_EQ(decode_header(FileKind::kHint, log).status().code(), StatusCode::kCorruption);
  for (std::size_t i = 0; i < kHeaderSize; ++i) {
    auto damaged = log;
    damaged[i] ^= 0x04;
    EXPECT_FALSE(decode_header(FileKind::kLog, damaged).is_ok()) << "byte " << i;
  }
  EXPECT_FALSE(decode_header(FileKind::kLog, std::span(log).first(63)).is_ok());
}

TEST(UserLogFormatTest, GoldenHintAndRemovalRecords) {
  const HintRecord record{key_of(0xAB), 4096, 1234};
  const auto bytes = encode_hint(record);
  EXPECT_EQ(std::memcmp(bytes.data(), record.key.bytes().data(), 16), 0);
  EXPECT_EQ(le::get_u64(bytes.data() + 16), 4096u);
  EXPECT_EQ(le::get_u32(bytes.data() + 24), 1234u);
  const Checksum128 check = xxh3_128(std::span<const std::uint8_t>(bytes.data(), 28));
  EXPECT_EQ(std::memcmp(bytes.data() + 28, check.data(), 4), 0);
  auto decoded = decode_hint(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->key, record.key);
  EXPECT_EQ(decoded->offset, 4096u);
  EXPECT_EQ(decoded->size, 1234u);
  EXPECT_EQ(decoded->end(), 4096u + 1240u);  // padded to 8
  for (std::size_t i = 0; i < kHintRecordSize; ++i) {
    auto damaged = bytes;
    damaged[i] ^= 0x10;
    EXPECT_FALSE(decode_hint(damaged).has_value()) << "byte " << i;
  }
  // An offset inside the header, or not 8-aligned, is no record.
  EXPECT_FALSE(decode_hint(encode_hint({key_of(1), 8, 100})).has_value());
  EXPECT_FALSE(decode_hint(encode_hint({key_of(1), 4100, 100})).has_value());

  const auto removal = encode_removal(key_of(0x5C));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(removal.data()), 4), "KCRM");
  EXPECT_EQ(le::get_u32(removal.data() + 4), 0u);
  EXPECT_EQ(std::memcmp(removal.data() + 8, key_of(0x5C).bytes().data(), 16), 0);
  const Checksum128 removal_check = xxh3_128(std::span<const std::uint8_t>(removal.data(), 24));
  EXPECT_EQ(std::memcmp(removal.data() + 24, removal_check.data(), 8), 0);
  EXPECT_EQ(*decode_removal(removal), key_of(0x5C));
  auto damaged = removal;
  damaged[12] ^= 1;
  EXPECT_FALSE(decode_removal(damaged).has_value());
  EXPECT_EQ((HintRecord{key_of(2), 64, 0}.end()), 96u);  // a removal is 32 bytes
}

// A log with good records, damage in the middle, and half a record at the
// end: the scan finds every good record, skips the damage to the next
// valid record, and calls the tail damaged up to the end.
TEST(UserLogScanTest, FindsRecordsSkipsDamageAndStopsAtATornTail) {
  TempFolder dir;
  const auto a = entry_bytes("a");
  const auto b = entry_bytes("bbbbbbbbbbbbbbb");
  const auto c = entry_bytes("c");
  std::vector<std::uint8_t> log(kHeaderSize, 0);
  std::vector<std::uint64_t> offsets;
  for (const auto* record : {&a, &b, &c}) {
    offsets.push_back(log.size());
    log.insert(log.end(), record->begin(), record->end());
    log.resize(padded(log.size()), 0);
  }
  const auto removal = encode_removal(key_of(9));
  const std::uint64_t removal_at = log.size();
  log.insert(log.end(), removal.begin(), removal.end());
  const std::uint64_t torn_at = log.size();
  log.insert(log.end(), a.begin(), a.begin() + static_cast<long>(a.size() / 2));
  log[offsets[1] + 40] ^= 0xFF;  // b's material: its checksum fails
  testing::write_file(dir / "db.ukdb", std::string(log.begin(), log.end()));

  auto file = *Env::posix().open_random_access(dir / "db.ukdb");
  std::vector<ScanStep> steps;
  for (std::uint64_t offset = kHeaderSize;;) {
    auto step = scan_step(*file, offset, log.size());
    ASSERT_TRUE(step.is_ok());
    if (step->kind == ScanStep::Kind::kEnd) break;
    ASSERT_GT(step->next, offset);
    steps.push_back(*step);
    offset = step->next;
  }
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].kind, ScanStep::Kind::kEntry);
  EXPECT_EQ(steps[0].record.offset, offsets[0]);
  EXPECT_EQ(steps[0].record.size, a.size());
  EXPECT_EQ(steps[1].kind, ScanStep::Kind::kDamaged);
  EXPECT_EQ(steps[1].record.offset, offsets[1]);
  EXPECT_EQ(steps[1].next, offsets[2]);  // found c again
  EXPECT_EQ(steps[2].kind, ScanStep::Kind::kEntry);
  EXPECT_EQ(steps[2].record.offset, offsets[2]);
  EXPECT_EQ(steps[3].kind, ScanStep::Kind::kRemoval);
  EXPECT_EQ(steps[3].record.offset, removal_at);
  EXPECT_EQ(steps[3].record.key, key_of(9));
  EXPECT_EQ(steps[4].kind, ScanStep::Kind::kDamaged);
  EXPECT_EQ(steps[4].record.offset, torn_at);
  EXPECT_EQ(steps[4].next, log.size());
}

// A log cut while it is scanned (a writer mending a torn tail): what is
// gone reads as damaged bytes up to the size the scan began with, never as
// an error.
TEST(UserLogScanTest, ALogCutWhileScannedIsDamageNotAnError) {
  TempFolder dir;
  const auto a = entry_bytes("a");
  std::vector<std::uint8_t> log(kHeaderSize, 0);
  log.insert(log.end(), a.begin(), a.end());
  testing::write_file(dir / "db.ukdb", std::string(log.begin(), log.end()));
  auto file = *Env::posix().open_random_access(dir / "db.ukdb");
  const std::uint64_t old_size = log.size() + 4096;  // as if 4 KiB were cut since
  auto first = scan_step(*file, kHeaderSize, old_size);
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(first->kind, ScanStep::Kind::kEntry);
  auto rest = scan_step(*file, first->next, old_size);
  ASSERT_TRUE(rest.is_ok()) << rest.status().to_string();
  EXPECT_EQ(rest->kind, ScanStep::Kind::kDamaged);
  EXPECT_EQ(rest->next, old_size);
}

}  // namespace
}  // namespace kcache::userlog
