#include "package/package_transfer.h"

#include <gtest/gtest.h>
#include <kcache/package.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fakes/counting_events.h"
#include "fakes/temp_folder.h"
#include "fakes/test_signer.h"
#include "fakes/user_log_files.h"
#include "format/kdb_file.h"
#include "sign/key_file.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

using testing::TempFolder;

// import_into_user takes from a package only the entries that pass every
// check a system-tier hit would make: the entry's own checksum and, in a
// signed package, the digest the signature covers. A package whose bytes
// were altered must never put them into the user cache, where they would
// be served with no signature left to check.
class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override { ::chmod(dir_.path().c_str(), 0700); }

  std::unique_ptr<Tier> user() {
    return make_user_tier({dir_ / "user", true}, Env::posix(), log_, events_);
  }
  static Entry entry_named(const std::string& name) {
    return testing::small_entry("backend fake\nkernel " + name + "\n", "binary of " + name);
  }
  void write_package(const std::string& path, const std::vector<Entry>& entries,
                     const KdbSigner* signer = nullptr, const std::string& db = "gfx90a") {
    std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
    for (const auto& e : entries) encoded.emplace_back(e.key, *encode_entry(e, Compression::kNone));
    Fields metadata;
    if (!db.empty()) metadata.emplace_back("db", db);
    ASSERT_TRUE(write_kdb(Env::posix(), path, encoded, metadata, signer).is_ok());
  }
  // Where the entry of `key` lies in the package at `path`.
  static KdbSlot slot_of(const std::string& path, const CacheKey& key) {
    auto kdb = KdbReader::open(path, Env::posix());
    EXPECT_TRUE(kdb.is_ok()) << kdb.status().to_string();
    for (const auto& slot : (*kdb)->slots()) {
      if (slot.key == key) return slot;
    }
    ADD_FAILURE() << "no slot for " << key.hex();
    return {};
  }
  // The binary `user` serves for `key` in database gfx90a, or "" on a miss.
  static std::string served(Tier& user, const CacheKey& key) {
    auto got = user.get({"gfx90a", "gfx90a"}, key);
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    if (!got.is_ok() || !got->has_value()) return "";
    const auto payload = (*got)->payload();
    return {reinterpret_cast<const char*>(payload.data()), payload.size()};
  }

  TempFolder dir_;
  Logger log_{LogLevel::kQuiet, {}};
  testing::CountingEvents events_;
  Entry a_ = entry_named("a");
  Entry b_ = entry_named("b");
  Entry c_ = entry_named("c");
};

TEST_F(ImportTest, EveryEntryOfAnIntactPackageIsImported) {
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_, c_});
  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  EXPECT_EQ(*imported, 3u);
  EXPECT_EQ(served(*tier, a_.key), "binary of a");
  EXPECT_EQ(served(*tier, b_.key), "binary of b");
  EXPECT_EQ(served(*tier, c_.key), "binary of c");
}

TEST_F(ImportTest, ABitFlippedEntryIsLeftOutAndTheRestImported) {
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_, c_});
  const KdbSlot slot = slot_of(pkg, b_.key);
  std::string bytes = testing::read_file(pkg);
  bytes[slot.offset + slot.size - 1] ^= 0x01;  // the last byte of b's binary
  testing::write_file(pkg, bytes);

  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  EXPECT_EQ(*imported, 2u);
  EXPECT_EQ(served(*tier, a_.key), "binary of a");
  EXPECT_EQ(served(*tier, b_.key), "");
  EXPECT_EQ(served(*tier, c_.key), "binary of c");
}

TEST_F(ImportTest, AnEntryAlteredAfterSigningIsNotImported) {
  // b swapped for another entry of the same key and size with a valid
  // checksum of its own: only the signed digest tells them apart.
  Entry evil = b_;
  const std::string evil_binary = "binary of B";
  evil.storage = ByteBuffer::copy_of(
      {reinterpret_cast<const std::uint8_t*>(evil_binary.data()), evil_binary.size()});
  const testing::TestSigner signer = testing::make_test_signer();
  const std::string pkg = dir_ / "gfx90a.kdb";
  const std::string forged = dir_ / "forged.kdb";
  write_package(pkg, {a_, b_}, &signer.signer);
  write_package(forged, {a_, evil});
  const KdbSlot slot = slot_of(pkg, b_.key);
  const KdbSlot forged_slot = slot_of(forged, b_.key);
  ASSERT_EQ(slot.size, forged_slot.size);
  std::string bytes = testing::read_file(pkg);
  bytes.replace(slot.offset, slot.size,
                testing::read_file(forged).substr(forged_slot.offset, forged_slot.size));
  testing::write_file(pkg, bytes);

  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  EXPECT_EQ(*imported, 1u);
  EXPECT_EQ(served(*tier, a_.key), "binary of a");
  EXPECT_EQ(served(*tier, b_.key), "");  // never "binary of B"

  // The same swap in an unsigned package cannot be told from the real
  // thing: its checksum holds, so it is imported (what signing is for).
  auto plain = user();
  auto from_forged = import_into_user(*plain, Env::posix(), forged, {}, Compression::kNone);
  ASSERT_TRUE(from_forged.is_ok());
  EXPECT_EQ(served(*plain, b_.key), "binary of B");
}

TEST_F(ImportTest, APackageOfOnlyBadEntriesIsAnErrorAndStoresNothing) {
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_});
  std::string bytes = testing::read_file(pkg);
  for (const CacheKey& key : {a_.key, b_.key}) {
    const KdbSlot slot = slot_of(pkg, key);
    bytes[slot.offset + slot.size - 1] ^= 0x40;
  }
  testing::write_file(pkg, bytes);

  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kCorruption);
  EXPECT_NE(imported.status().message().find("none of its 2 entries passes its checks"),
            std::string::npos)
      << imported.status().message();
  EXPECT_EQ(served(*tier, a_.key), "");
  EXPECT_EQ(served(*tier, b_.key), "");
}

// What the user cache holds is served with no signature left to check: a
// package the system tier would refuse for its signature is not let in
// by import. Without keys, one whose signature does not hold (altered
// after signing, or forged); under trusted keys, also an unsigned one and
// one signed by another key. Nothing of a refused package is stored.
TEST_F(ImportTest, APackageWhoseSignatureDoesNotHoldIsRefusedWhole) {
  const testing::TestSigner signer = testing::make_test_signer();
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_}, &signer.signer);
  std::string bytes = testing::read_file(pkg);
  bytes[bytes.size() - 5] ^= 0x01;  // in the signature itself
  testing::write_file(pkg, bytes);

  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kCorruption);
  EXPECT_NE(imported.status().message().find("signature does not match its contents"),
            std::string::npos)
      << imported.status().message();
  EXPECT_EQ(served(*tier, a_.key), "");
  EXPECT_EQ(served(*tier, b_.key), "");
}

TEST_F(ImportTest, UnderTrustedKeysOnlyAPackageTheySignIsImported) {
  const testing::TestSigner trusted = testing::make_test_signer();
  const testing::TestSigner other = testing::make_test_signer();
  std::filesystem::create_directories(dir_ / "keys");
  ASSERT_TRUE(write_key_pair(dir_ / "keys/trusted", trusted.pair, false, Env::posix()).is_ok());
  const std::vector<std::string> keys = {dir_ / "keys/trusted.pub"};
  write_package(dir_ / "unsigned.kdb", {a_});
  write_package(dir_ / "other.kdb", {a_}, &other.signer);
  write_package(dir_ / "signed.kdb", {a_}, &trusted.signer);

  for (const auto& [name, why] : {std::pair{"unsigned.kdb", "it is not signed"},
                                  std::pair{"other.kdb", "which is not a trusted key"}}) {
    auto tier = user();
    auto imported = import_into_user(*tier, Env::posix(), dir_ / name, keys, Compression::kNone);
    ASSERT_FALSE(imported.is_ok()) << name;
    EXPECT_EQ(imported.status().code(), StatusCode::kCorruption);
    EXPECT_NE(imported.status().message().find(why), std::string::npos)
        << imported.status().message();
    EXPECT_NE(imported.status().message().find("KCACHE_TRUSTED_KEYS"), std::string::npos);
    EXPECT_EQ(served(*tier, a_.key), "") << name;
  }
  auto tier = user();
  auto imported =
      import_into_user(*tier, Env::posix(), dir_ / "signed.kdb", keys, Compression::kNone);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  EXPECT_EQ(served(*tier, a_.key), "binary of a");
}

TEST_F(ImportTest, APackageThatNamesNoDatabaseIsRefused) {
  const std::string pkg = dir_ / "nameless.kdb";
  write_package(pkg, {a_}, nullptr, /*db=*/"");
  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(imported.status().message().find("names no database"), std::string::npos);
}

// merge joins packages this kcache reads: one of another key format is
// refused, not relabelled with this kcache's format, and nothing written.
TEST_F(ImportTest, MergeRefusesAPackageOfAnotherKeyFormat) {
  const std::string good = dir_ / "good.kdb";
  const std::string other = dir_ / "other.kdb";
  write_package(good, {a_});
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  encoded.emplace_back(b_.key, *encode_entry(b_, Compression::kNone));
  ASSERT_TRUE(
      write_kdb(Env::posix(), other, encoded, {{"db", "gfx90a"}, {"key_format", "99"}}, nullptr)
          .is_ok());
  const std::string out = dir_ / "merged.kdb";
  auto merged = merge_packages({good, other}, out, "");
  ASSERT_FALSE(merged.is_ok());
  EXPECT_EQ(merged.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(merged.status().message().find("key format 99"), std::string::npos)
      << merged.status().message();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_TRUE(merge_packages({good}, out, "").is_ok());
}

// Two packages with one key: the first package's copy is kept, and a
// later copy with another binary is counted and named (a compiler whose
// output differs from run to run, or an altered package), while one that
// differs only in its metadata (when and how long it was compiled) is not.
TEST_F(ImportTest, MergeSaysWhenALaterPackageHoldsAnotherBinaryForAKey) {
  Entry b_again = b_;
  b_again.created_unix += 100;
  b_again.metadata.emplace_back("compile_us", "123");
  Entry b_other = b_;
  const std::string other_binary = "binary of B";
  b_other.storage = ByteBuffer::copy_of(
      {reinterpret_cast<const std::uint8_t*>(other_binary.data()), other_binary.size()});
  b_other.payload_size = other_binary.size();
  const std::string first = dir_ / "first.kdb";
  const std::string same = dir_ / "same.kdb";
  const std::string other = dir_ / "other.kdb";
  write_package(first, {a_, b_});
  write_package(same, {b_again, c_});
  write_package(other, {b_other});

  auto alike = merge_packages_reporting({first, same}, dir_ / "alike.kdb");
  ASSERT_TRUE(alike.is_ok()) << alike.status().to_string();
  EXPECT_EQ(alike->entries, 3u);
  EXPECT_EQ(alike->differing, 0u);

  auto merged = merge_packages_reporting({first, same, other}, dir_ / "merged.kdb");
  ASSERT_TRUE(merged.is_ok()) << merged.status().to_string();
  EXPECT_EQ(merged->entries, 3u);
  EXPECT_EQ(merged->differing, 1u);
  EXPECT_EQ(merged->first_differing, b_.key.hex() + " in " + other);
  auto tier = user();
  ASSERT_TRUE(
      import_into_user(*tier, Env::posix(), dir_ / "merged.kdb", {}, Compression::kNone).is_ok());
  EXPECT_EQ(served(*tier, b_.key), "binary of b");  // the first package's
}

// A package imported again stores nothing again (each import appended a
// second copy of every entry to the user cache's log).
TEST_F(ImportTest, AnEntryTheUserCacheHoldsIsNotStoredAgain) {
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_});
  auto tier = user();
  auto first = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(*first, 2u);
  const auto log_size = std::filesystem::file_size(dir_ / "user/gfx90a.ukdb");
  auto again = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(std::filesystem::file_size(dir_ / "user/gfx90a.ukdb"), log_size);
  write_package(pkg, {a_, b_, c_});
  auto more = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  ASSERT_TRUE(more.is_ok()) << more.status().to_string();
  EXPECT_EQ(*more, 1u);
  EXPECT_EQ(served(*tier, c_.key), "binary of c");
}

TEST_F(ImportTest, ATruncatedPackageIsAnErrorNotAPartialImport) {
  const std::string pkg = dir_ / "gfx90a.kdb";
  write_package(pkg, {a_, b_});
  std::string bytes = testing::read_file(pkg);
  testing::write_file(pkg, bytes.substr(0, bytes.size() / 2));
  auto tier = user();
  auto imported = import_into_user(*tier, Env::posix(), pkg, {}, Compression::kNone);
  EXPECT_FALSE(imported.is_ok());
  EXPECT_EQ(served(*tier, a_.key), "");
}

}  // namespace
}  // namespace kcache
