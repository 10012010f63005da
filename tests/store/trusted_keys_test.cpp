#include "store/system/trusted_keys.h"

#include <gtest/gtest.h>
#include <kcache/package.h>  // what info and verify say of such a package
#include <sys/stat.h>

#include <filesystem>

#include "base/hash.h"
#include "fakes/temp_folder.h"
#include "fakes/test_signer.h"
#include "format/entry.h"
#include "sign/key_file.h"

namespace kcache {
namespace {

using testing::TempFolder;

std::vector<std::uint8_t> encoded_entry(const std::string& name, const std::string& binary) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(binary.data()), binary.size()});
  entry.payload_size = binary.size();
  return *encode_entry(entry, Compression::kNone);
}

CacheKey key_of(const std::string& name) { return CacheKey(xxh3_128("name " + name + "\n")); }

class TrustedKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(dir_.path().c_str(), 0700);
    std::filesystem::create_directories(dir_ / "keys");
    ASSERT_TRUE(write_key_pair(dir_ / "keys/a", signer_.pair, false, env_).is_ok());
    ASSERT_TRUE(write_key_pair(dir_ / "keys/b", other_.pair, false, env_).is_ok());
    ::chmod((dir_ / "keys").c_str(), 0755);
  }
  void write(const std::string& name, const KdbSigner* signer,
             const std::string& binary = "the binary") {
    ASSERT_TRUE(
        write_kdb(env_, dir_ / name, {{key_of("k"), encoded_entry("k", binary)}}, {}, signer)
            .is_ok());
  }
  std::unique_ptr<KdbReader> open(const std::string& name) {
    auto reader = KdbReader::open(dir_ / name, env_);
    EXPECT_TRUE(reader.is_ok()) << reader.status().to_string();
    return reader ? std::move(*reader) : nullptr;
  }

  Env& env_ = Env::posix();
  TempFolder dir_;
  testing::TestSigner signer_ = testing::make_test_signer();
  testing::TestSigner other_ = testing::make_test_signer();
};

TEST_F(TrustedKeysTest, OnlyAPackageSignedByATrustedKeyIsAccepted) {
  write("signed.kdb", &signer_.signer);
  write("other.kdb", &other_.signer);
  write("plain.kdb", nullptr);
  auto keys = TrustedKeys::load({dir_ / "keys/a.pub"}, env_);
  EXPECT_TRUE(keys.configured());
  EXPECT_TRUE(keys.problems().empty());
  ASSERT_EQ(keys.keys().size(), 1u);

  EXPECT_EQ(keys.refusal(*open("signed.kdb")), std::nullopt);
  auto plain = keys.refusal(*open("plain.kdb"));
  ASSERT_TRUE(plain.has_value());
  EXPECT_NE(plain->find("not signed"), std::string::npos) << *plain;
  auto other = keys.refusal(*open("other.kdb"));
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->find("key " + key_id(other_.pair.public_key) + ", which is not a trusted key"),
            std::string::npos)
      << *other;
}

TEST_F(TrustedKeysTest, ASettingThatNamesNoKeyRefusesEveryPackage) {
  write("signed.kdb", &signer_.signer);
  auto keys = TrustedKeys::load({""}, env_);
  EXPECT_TRUE(keys.configured());
  ASSERT_EQ(keys.problems().size(), 1u);
  EXPECT_NE(keys.problems()[0].find("names no key file"), std::string::npos);
  EXPECT_TRUE(keys.refusal(*open("signed.kdb")).has_value());
}

TEST_F(TrustedKeysTest, ASignatureMadeWithAnotherKeyUnderATrustedNameIsForged) {
  // The package names the trusted key, but another key signed it.
  KdbSigner forger = other_.signer;
  forger.public_key = signer_.pair.public_key;
  write("forged.kdb", &forger);
  auto keys = TrustedKeys::load({dir_ / "keys/a.pub"}, env_);
  auto refusal = keys.refusal(*open("forged.kdb"));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("does not match its contents"), std::string::npos) << *refusal;
  EXPECT_EQ(signature_problem(*open("forged.kdb")), refusal);
}

TEST_F(TrustedKeysTest, AnEntrySwappedForAnotherValidOneFailsItsDigest) {
  // Same size, own checksum right: only the signed digest tells them apart.
  write("signed.kdb", &signer_.signer, "the binary");
  write("swap.kdb", nullptr, "evil binar");
  std::string signed_bytes = testing::read_file(dir_ / "signed.kdb");
  const std::string swap_bytes = testing::read_file(dir_ / "swap.kdb");
  const std::size_t entry_size = encoded_entry("k", "the binary").size();
  signed_bytes.replace(kKdbHeaderSize, entry_size, swap_bytes.substr(kKdbHeaderSize, entry_size));
  testing::write_file(dir_ / "spliced.kdb", signed_bytes);

  auto reader = open("spliced.kdb");
  ASSERT_NE(reader, nullptr);
  auto keys = TrustedKeys::load({dir_ / "keys"}, env_);
  EXPECT_EQ(keys.refusal(*reader), std::nullopt);  // header, index, signature: all intact
  const KdbSlot slot = *reader->find(key_of("k"));
  auto bytes = reader->read(slot);
  ASSERT_TRUE(bytes.is_ok());
  EXPECT_TRUE(decode_entry(*bytes, &slot.key).is_ok());  // its own checksum holds
  EXPECT_FALSE(matches_signed_digest(*reader, slot, bytes->span()));
  auto good = open("signed.kdb");
  auto good_bytes = good->read(*good->find(key_of("k")));
  EXPECT_TRUE(matches_signed_digest(*good, *good->find(key_of("k")), good_bytes->span()));

  // What info and verify say of it under the keys: the entry named, and not
  // "trusted", since the system tier refuses such a package whole (an
  // audit saw "signature holds, trusted: yes").
  auto info = read_package_info(dir_ / "spliced.kdb", /*check_entries=*/true, {dir_ / "keys"});
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->bad_entries, 1u);
  ASSERT_EQ(info->bad_entry_problems.size(), 1u);
  EXPECT_EQ(info->bad_entry_problems[0].second, kNotAsSigned);
  EXPECT_NE(info->refusal.find("altered after it was signed"), std::string::npos) << info->refusal;
  EXPECT_TRUE(info->signature_problem.empty());  // the signature itself holds
  EXPECT_EQ(info->entries_not_as_signed, 1u);

  // Without keys the system tier checks the entry's checksum, not its
  // signed digest, and serves it: not refused, and the entry counted as
  // not as signed apart from entries that are never served.
  auto no_keys = read_package_info(dir_ / "spliced.kdb", /*check_entries=*/true);
  ASSERT_TRUE(no_keys.is_ok()) << no_keys.status().to_string();
  EXPECT_EQ(no_keys->bad_entries, 1u);
  EXPECT_EQ(no_keys->entries_not_as_signed, 1u);
  EXPECT_EQ(no_keys->refusal, "");
}

TEST_F(TrustedKeysTest, KeyFilesThatCannotBeUsedAreProblemsAndTheOthersCount) {
  testing::write_file(dir_ / "keys/broken.pub", "kcache-ed25519-public 1234\n");
  testing::write_file(dir_ / "open/x.pub", testing::read_file(dir_ / "keys/a.pub"));
  ::chmod((dir_ / "open").c_str(), 0777);
  std::filesystem::create_directories(dir_ / "empty-folder");
  auto keys = TrustedKeys::load(
      {dir_ / "keys", dir_ / "absent.pub", dir_ / "open", dir_ / "empty-folder"}, env_);
  // a.pub and b.pub of keys/ count; broken.pub, absent.pub, open/ do not.
  EXPECT_EQ(keys.keys().size(), 2u);
  ASSERT_EQ(keys.problems().size(), 4u);
  EXPECT_NE(keys.problems()[0].find("broken.pub"), std::string::npos) << keys.problems()[0];
  EXPECT_NE(keys.problems()[1].find("absent.pub"), std::string::npos) << keys.problems()[1];
  EXPECT_NE(keys.problems()[2].find("another user could have written it"), std::string::npos)
      << keys.problems()[2];
  EXPECT_NE(keys.problems()[3].find("has no .pub file"), std::string::npos) << keys.problems()[3];

  // A key file others can write is no key at all.
  ::chmod((dir_ / "keys/a.pub").c_str(), 0666);
  auto open_key = TrustedKeys::load({dir_ / "keys/a.pub"}, env_);
  EXPECT_TRUE(open_key.configured());
  EXPECT_TRUE(open_key.keys().empty());
  write("signed.kdb", &signer_.signer);
  EXPECT_TRUE(open_key.refusal(*open("signed.kdb")).has_value());

  EXPECT_FALSE(TrustedKeys::load({}, env_).configured());
}

}  // namespace
}  // namespace kcache
