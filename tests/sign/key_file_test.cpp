#include "sign/key_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = ed25519_generate();
    ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
    pair_ = *pair;
  }
  Env& env_ = Env::posix();
  TempFolder dir_;
  Ed25519KeyPair pair_;
};

TEST_F(KeyFileTest, APairWrittenReadsBack) {
  ASSERT_TRUE(write_key_pair(dir_ / "k", pair_, false, env_).is_ok());
  EXPECT_EQ(std::filesystem::status(dir_ / "k").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(read_public_key(dir_ / "k.pub", env_).value(), pair_.public_key);
  EXPECT_EQ(read_secret_key(dir_ / "k", env_).value(), pair_.secret_key);
  // The public file names its key.
  EXPECT_NE(testing::read_file(dir_ / "k.pub").find("key " + key_id(pair_.public_key)),
            std::string::npos);
  EXPECT_EQ(key_id(pair_.public_key).size(), 16u);
}

TEST_F(KeyFileTest, AFolderThatIsNotThereIsSaidAsSuch) {
  Status made = write_key_pair(dir_ / "none/k", pair_, false, env_);
  EXPECT_EQ(made.code(), StatusCode::kNotFound);
  EXPECT_NE(made.message().find("its folder " + dir_ / "none" + " does not exist"),
            std::string::npos)
      << made.message();
  EXPECT_EQ(made.message().find(".tmp."), std::string::npos) << made.message();
}

TEST_F(KeyFileTest, ExistingFilesAreKeptUnlessOverwriteIsAsked) {
  ASSERT_TRUE(write_key_pair(dir_ / "k", pair_, false, env_).is_ok());
  auto other = ed25519_generate();
  ASSERT_TRUE(other.is_ok());
  Status again = write_key_pair(dir_ / "k", *other, false, env_);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(read_public_key(dir_ / "k.pub", env_).value(), pair_.public_key);
  ASSERT_TRUE(write_key_pair(dir_ / "k", *other, true, env_).is_ok());
  EXPECT_EQ(read_public_key(dir_ / "k.pub", env_).value(), other->public_key);
}

TEST_F(KeyFileTest, APrivateKeyOthersCanReadIsRefused) {
  ASSERT_TRUE(write_key_pair(dir_ / "k", pair_, false, env_).is_ok());
  ::chmod((dir_ / "k").c_str(), 0640);
  auto key = read_secret_key(dir_ / "k", env_);
  ASSERT_FALSE(key.is_ok());
  EXPECT_NE(key.status().message().find("mode 0640"), std::string::npos) << key.status().message();
  EXPECT_NE(key.status().message().find("chmod 600"), std::string::npos);
}

// Whoever could replace a private key chooses what is signed in its name:
// held to the rule packages are (an audit signed with another user's key,
// and with one in a folder anyone could write).
// The format is judged before the mode: a script others can read and run
// is not a key, whatever chmod would do to it.
TEST_F(KeyFileTest, AFileOthersCanReadThatIsNotAKeyIsSaidToBeNoKey) {
  testing::write_file(dir_ / "script.sh", "#!/bin/sh\necho hello\n");
  ::chmod((dir_ / "script.sh").c_str(), 0755);
  auto key = read_secret_key(dir_ / "script.sh", env_);
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("is not a kcache private key file"), std::string::npos)
      << key.status().message();
  EXPECT_EQ(key.status().message().find("others can read"), std::string::npos)
      << key.status().message();
}

TEST_F(KeyFileTest, APrivateKeyAnotherUserCouldReplaceIsRefused) {
  std::filesystem::create_directory(dir_ / "open");
  ASSERT_TRUE(write_key_pair(dir_ / "open/k", pair_, false, env_).is_ok());
  ::chmod((dir_ / "open").c_str(), 0777);
  auto key = read_secret_key(dir_ / "open/k", env_);
  ASSERT_FALSE(key.is_ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("another user could have written or replaced"),
            std::string::npos)
      << key.status().message();
  EXPECT_NE(key.status().message().find("is writable by others"), std::string::npos)
      << key.status().message();
  ::chmod((dir_ / "open").c_str(), 0700);
  EXPECT_EQ(read_secret_key(dir_ / "open/k", env_).value(), pair_.secret_key);
}

// A private key whose public half is another key's (pasted in, or
// damaged) would sign what no one can check: refused, with why.
TEST_F(KeyFileTest, APrivateKeyWithAnotherPublicHalfIsRefused) {
  auto other = ed25519_generate();
  ASSERT_TRUE(other.is_ok());
  Ed25519KeyPair mixed = pair_;
  std::copy(other->public_key.begin(), other->public_key.end(), mixed.secret_key.begin() + 32);
  ASSERT_TRUE(write_key_pair(dir_ / "k", mixed, false, env_).is_ok());
  auto key = read_secret_key(dir_ / "k", env_);
  ASSERT_FALSE(key.is_ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("is damaged"), std::string::npos) << key.status().message();
  auto whole = ed25519_key_is_whole(pair_.secret_key);
  ASSERT_TRUE(whole.is_ok());
  EXPECT_TRUE(*whole);
}

TEST_F(KeyFileTest, AKeyThroughALinkIsRead) {
  ASSERT_TRUE(write_key_pair(dir_ / "k", pair_, false, env_).is_ok());
  std::filesystem::create_symlink(dir_ / "k", dir_ / "link");
  std::filesystem::create_symlink(dir_ / "k.pub", dir_ / "link.pub");
  EXPECT_EQ(read_secret_key(dir_ / "link", env_).value(), pair_.secret_key);
  EXPECT_EQ(read_public_key(dir_ / "link.pub", env_).value(), pair_.public_key);
}

TEST_F(KeyFileTest, WhatIsNotAKeyIsSaidSo) {
  ASSERT_TRUE(write_key_pair(dir_ / "k", pair_, false, env_).is_ok());
  // The halves swapped: the private key named as a public one is said as
  // such (and under a .pub name, as one that may have been shared).
  auto swapped = read_public_key(dir_ / "k", env_);
  EXPECT_EQ(swapped.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(swapped.status().message().find("is a private key, not a public one"),
            std::string::npos)
      << swapped.status().message();
  std::filesystem::copy_file(dir_ / "k", dir_ / "leak.pub");
  EXPECT_NE(
      read_public_key(dir_ / "leak.pub", env_).status().message().find("keep this one secret"),
      std::string::npos);
  ::chmod((dir_ / "k.pub").c_str(), 0600);
  EXPECT_EQ(read_secret_key(dir_ / "k.pub", env_).status().code(), StatusCode::kInvalidArgument);
  // Damaged, empty, huge, a folder, absent.
  std::string text = testing::read_file(dir_ / "k.pub");
  const std::vector<std::string> bad = {text.substr(0, 40),
                                        std::string(text).replace(30, 1, "g"),
                                        "",
                                        "kcache-ed25519-public\n",
                                        "kcache-ed25519-public " + std::string(1 << 13, 'a') + "\n",
                                        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3 user@host\n"};
  for (std::size_t i = 0; i < bad.size(); ++i) {
    testing::write_file(dir_ / "bad.pub", bad[i]);
    auto key = read_public_key(dir_ / "bad.pub", env_);
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument) << i << ": " << bad[i];
    EXPECT_NE(key.status().message().find(dir_ / "bad.pub"), std::string::npos);
  }
  // Two keys in one file: refused, not the first taken and the second
  // passed over; a blank line after the one key is fine.
  testing::write_file(dir_ / "two.pub", text + text);
  auto two = read_public_key(dir_ / "two.pub", env_);
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(two.status().message().find("holds more than one line"), std::string::npos)
      << two.status().message();
  testing::write_file(dir_ / "blank.pub", text + "\n \n");
  EXPECT_EQ(read_public_key(dir_ / "blank.pub", env_).value(), pair_.public_key);
  std::filesystem::create_directories(dir_ / "folder.pub");
  EXPECT_EQ(read_public_key(dir_ / "folder.pub", env_).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(read_public_key(dir_ / "absent.pub", env_).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kcache
