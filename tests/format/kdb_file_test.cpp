#include "format/kdb_file.h"

#include <gtest/gtest.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/hash.h"
#include "fakes/temp_folder.h"
#include "fakes/test_signer.h"
#include "format/endian.h"
#include "format/entry.h"
#include "sign/ed25519.h"

namespace kcache {
namespace {

using testing::TempFolder;

std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> make_entries(int count) {
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> entries;
  for (int i = 0; i < count; ++i) {
    Entry entry;
    entry.material = "n " + std::to_string(i) + "\n";
    entry.key = CacheKey(xxh3_128(entry.material));
    std::string payload(100 + i, static_cast<char>('a' + i % 26));
    entry.storage = ByteBuffer::copy_of(
        {reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()});
    entry.payload_size = payload.size();
    entries.emplace_back(entry.key, *encode_entry(entry, Compression::kNone));
  }
  return entries;
}

TEST(KdbFileTest, WriteThenFindEveryEntry) {
  TempFolder dir;
  auto entries = make_entries(50);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", entries, {{"db", "x"}}).is_ok());
  EXPECT_EQ(
      std::filesystem::status(dir / "x.kdb").permissions() & std::filesystem::perms::others_read,
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
  EXPECT_FALSE((*reader)->find(CacheKey(xxh3_128(std::string_view("absent")))).has_value());
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

// Found by fuzz_kdb_open: an empty slot was copied with memcpy from a null
// pointer (undefined behaviour, reported by the asan preset's UBSan).
TEST(KdbFileTest, EmptySlotWritesAndReadsBack) {
  TempFolder dir;
  const CacheKey key(xxh3_128(std::string_view("empty")));
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "e.kdb", {{key, {}}}, {}).is_ok());
  auto reader = KdbReader::open(dir / "e.kdb", Env::posix());
  ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
  auto slot = (*reader)->find(key);
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(slot->size, 0u);
  auto read = (*reader)->read(*slot);
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(read->size, 0u);
  EXPECT_EQ(decode_entry(*read, &key).status().code(), StatusCode::kCorruption);
}

// Found by fuzz_kdb_open: a slot whose offset + size wrapped around 2^64
// passed the bounds check, and reading it then asked for an impossible
// buffer or a negative file offset. The checksum does not stop this: anyone
// can recompute it.
TEST(KdbFileTest, SlotPastTheIndexIsCorruptionEvenWhenItsEndWraps) {
  TempFolder dir;
  auto entries = make_entries(1);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", entries, {}).is_ok());
  const std::string good = testing::read_file(dir / "x.kdb");
  const std::uint64_t index_offset =
      le::get_u64(reinterpret_cast<const std::uint8_t*>(good.data()) + 24);
  for (auto [offset, size] : {std::pair<std::uint64_t, std::uint64_t>{64, ~std::uint64_t{0}},
                              {~std::uint64_t{0} - 703, 0x30f}}) {
    std::string bad = good;
    auto* bytes = reinterpret_cast<std::uint8_t*>(bad.data());
    le::put_u64(bytes + index_offset + CacheKey::kSize, offset);
    le::put_u64(bytes + index_offset + CacheKey::kSize + 8, size);
    Checksummer checksum;  // resealed, as a hostile writer would
    checksum.update({bytes, 48});
    checksum.update({bytes + index_offset, bad.size() - index_offset});
    Checksum128 digest = checksum.finish();
    std::memcpy(bytes + 48, digest.data(), digest.size());
    testing::write_file(dir / "bad.kdb", bad);
    auto reader = KdbReader::open(dir / "bad.kdb", Env::posix());
    ASSERT_FALSE(reader.is_ok()) << "slot at " << offset << " of " << size << " bytes";
    EXPECT_EQ(reader.status().code(), StatusCode::kCorruption);
  }
}

TEST(KdbFileTest, DamageToHeaderOrIndexIsCorruption) {
  TempFolder dir;
  auto entries = make_entries(5);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", entries, {{"db", "x"}}).is_ok());
  const std::string good = testing::read_file(dir / "x.kdb");
  // Flip a byte in the header, in the index (the last 32*5 + meta bytes),
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

// What is wrong is said as it is: another version, flags unknown, a file
// cut or grown, a header or index that fails its checksum.
TEST(KdbFileTest, EachDamageIsNamedForWhatItIs) {
  TempFolder dir;
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "x.kdb", make_entries(3), {{"db", "x"}}).is_ok());
  const std::string good = testing::read_file(dir / "x.kdb");
  auto problem = [&](const std::string& bytes) {
    testing::write_file(dir / "bad.kdb", bytes);
    auto reader = KdbReader::open(dir / "bad.kdb", Env::posix());
    return reader.is_ok() ? std::string("(opened)") : reader.status().message();
  };
  std::string other_version = good;
  other_version[8] = 9;
  EXPECT_NE(problem(other_version).find("is of .kdb format version 9; this kcache reads version 2"),
            std::string::npos);
  std::string other_flags = good;
  other_flags[12] |= 4;
  EXPECT_NE(problem(other_flags).find("header flags this kcache does not know (0x4)"),
            std::string::npos);
  EXPECT_NE(problem(good + "x").find("is 1 byte longer than its header says"), std::string::npos);
  EXPECT_NE(
      problem(good.substr(0, good.size() - 7)).find("is 7 bytes shorter than its header says"),
      std::string::npos);
  // Cut before its index too: a cut file, not an "inconsistent header".
  const std::string cut = good.substr(0, 100);
  EXPECT_NE(problem(cut).find("is " + std::to_string(good.size() - 100) +
                              " bytes shorter than its header says, as if truncated"),
            std::string::npos)
      << problem(cut);
  std::string sum = good;
  sum[48] ^= 1;  // the header's checksum
  EXPECT_NE(problem(sum).find("failed the checksum of its header and index"), std::string::npos);
}

TEST(KdbFileTest, SignedPackageCarriesDigestsAndASignatureOverItsTail) {
  TempFolder dir;
  auto entries = make_entries(7);
  auto test_signer = testing::make_test_signer();
  ASSERT_TRUE(
      write_kdb(Env::posix(), dir / "s.kdb", entries, {{"db", "s"}}, &test_signer.signer).is_ok());
  auto reader = KdbReader::open(dir / "s.kdb", Env::posix());
  ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
  ASSERT_TRUE((*reader)->is_signed());
  EXPECT_EQ(*(*reader)->signer_key(), test_signer.pair.public_key);
  EXPECT_EQ((*reader)->metadata(), (Fields{{"db", "s"}}));
  for (const auto& [key, bytes] : entries) {
    auto slot = (*reader)->find(key);
    ASSERT_TRUE(slot.has_value());
    ASSERT_NE((*reader)->entry_digest(*slot), nullptr);
    EXPECT_EQ(*(*reader)->entry_digest(*slot), sha256(bytes));
  }
  EXPECT_TRUE(ed25519_verify((*reader)->signed_message(), *(*reader)->signature(),
                             test_signer.pair.public_key)
                  .value());

  // Unsigned: none of it.
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "u.kdb", entries, {{"db", "s"}}).is_ok());
  auto plain = KdbReader::open(dir / "u.kdb", Env::posix());
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE((*plain)->is_signed());
  EXPECT_EQ((*plain)->signer_key(), nullptr);
  EXPECT_EQ((*plain)->entry_digest((*plain)->slots()[0]), nullptr);
  EXPECT_TRUE((*plain)->signed_message().empty());
}

TEST(KdbFileTest, DamageAfterTheEntriesOfASignedPackageIsCaught) {
  TempFolder dir;
  auto entries = make_entries(3);
  auto test_signer = testing::make_test_signer();
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "s.kdb", entries, {}, &test_signer.signer).is_ok());
  const std::string good = testing::read_file(dir / "s.kdb");
  const std::size_t tail = 3 * kKdbIndexEntrySize + 3 * 32 + kKdbSignatureBlockSize;
  // Every byte from the index on: the checksum catches all but the
  // signature's own 64 bytes, and those break the signature.
  for (std::size_t at = good.size() - tail; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] ^= 0x01;
    testing::write_file(dir / "bad.kdb", bad);
    auto reader = KdbReader::open(dir / "bad.kdb", Env::posix());
    if (!reader) {
      EXPECT_EQ(reader.status().code(), StatusCode::kCorruption) << at;
      continue;
    }
    EXPECT_GE(at, good.size() - 64) << "undetected damage at " << at;
    EXPECT_FALSE(ed25519_verify((*reader)->signed_message(), *(*reader)->signature(),
                                *(*reader)->signer_key())
                     .value())
        << at;
  }
  // Truncated by a digest's size, or the signature block dropped.
  for (std::size_t cut : {std::size_t{32}, kKdbSignatureBlockSize, std::size_t{1}}) {
    testing::write_file(dir / "short.kdb", good.substr(0, good.size() - cut));
    EXPECT_EQ(KdbReader::open(dir / "short.kdb", Env::posix()).status().code(),
              StatusCode::kCorruption)
        << cut;
  }
  // An unknown flag is refused.
  std::string flagged = good;
  flagged[12] |= 0x02;
  testing::write_file(dir / "flag.kdb", flagged);
  EXPECT_EQ(KdbReader::open(dir / "flag.kdb", Env::posix()).status().code(),
            StatusCode::kCorruption);
}

TEST(KdbFileTest, ASignerThatFailsWritesNothing) {
  TempFolder dir;
  KdbSigner failing;
  failing.sign = [](std::span<const std::uint8_t>) -> Result<KdbSignature> {
    return Status::unavailable("no libsodium here");
  };
  Status written = write_kdb(Env::posix(), dir / "s.kdb", make_entries(2), {}, &failing);
  EXPECT_EQ(written.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(std::filesystem::exists(dir / "s.kdb"));
}

// A package written where a killed pack left its temporary (its writer's
// pid gone, not written to for an hour): the package in place, the
// temporary gone (env/abandoned_temporaries.h).
TEST(KdbFileTest, WritingAPackageRemovesWhatAKilledWriterLeft) {
  TempFolder dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::string left = dir / ("sm_90.kdb.tmp." + std::to_string(child) + ".0.42");
  testing::write_file(left, "half a package");
  struct timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec -= 3600;
  times[1] = times[0];
  ASSERT_EQ(::utimes(left.c_str(), times), 0);
  ASSERT_TRUE(write_kdb(Env::posix(), dir / "sm_90.kdb", {}, {{"db", "sm_90"}}, nullptr).is_ok());
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(std::filesystem::exists(dir / "sm_90.kdb"));
}

}  // namespace
}  // namespace kcache
