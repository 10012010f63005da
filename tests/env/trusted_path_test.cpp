// ssh's StrictModes for what kcache serves: a file another user could
// have written is named, with why; the owner is faked through the Env so
// that the rule is tested alike as root and as a user.
#include "env/trusted_path.h"

#include <gtest/gtest.h>
#include <sys/acl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

// The real file system, with other owners for some paths.
class OwnersEnv : public EnvWrapper {
 public:
  OwnersEnv() : EnvWrapper(const_cast<Env&>(Env::posix())) {}
  Result<FileInfo> file_info(const std::string& path) const override {
    auto info = EnvWrapper::file_info(path);
    if (info) {
      if (auto it = owners.find(path); it != owners.end()) info->owner = it->second;
    }
    return info;
  }
  // No group holds this user alone unless a test says so.
  bool group_is_private(gid_t group) const override { return private_groups.contains(group); }
  Result<AclWriters> acl_writers(const std::string& path) const override {
    if (auto it = acls.find(path); it != acls.end()) return it->second;
    return EnvWrapper::acl_writers(path);
  }
  std::map<std::string, uid_t> owners;
  std::map<std::string, Result<AclWriters>> acls;
  std::set<gid_t> private_groups;
};

class TrustedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(dir_.path().c_str(), 0700);
    write_file(dir_ / "db/p.kdb", "package");
    ::chmod((dir_ / "db").c_str(), 0755);
    ::chmod((dir_ / "db/p.kdb").c_str(), 0644);
  }
  std::optional<std::string> reason(const std::string& path) {
    return untrusted_reason(path, env_);
  }
  static uid_t other() { return ::getuid() == 12345 ? 12346 : 12345; }

  TempFolder dir_;
  OwnersEnv env_;
};

TEST_F(TrustedPathTest, APrivateFileIsTrusted) {
  EXPECT_EQ(reason(dir_ / "db/p.kdb"), std::nullopt);
  EXPECT_EQ(reason(dir_ / "db/absent.kdb"), std::nullopt);  // absent: the caller's business
}

TEST_F(TrustedPathTest, AFileOthersCanWriteIsNot) {
  for (mode_t mode : {0666, 0646, 0664}) {
    ::chmod((dir_ / "db/p.kdb").c_str(), mode);
    auto why = reason(dir_ / "db/p.kdb");
    ASSERT_TRUE(why.has_value()) << std::oct << mode;
    EXPECT_NE(why->find("is writable by others"), std::string::npos) << *why;
  }
}

// A POSIX ACL that lets another user or a group write, which the mode
// does not show (0664 with an ACL: the group bits are its mask).
TEST_F(TrustedPathTest, AFileOrFolderAnACLLetsOthersWriteIsNot) {
  const std::string file = dir_ / "db/p.kdb";
  const std::string folder = dir_ / "db";
  env_.acls.insert_or_assign(file, AclWriters{{other()}, {}});
  auto why = reason(file);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "file " + file + " is writable by others (its ACL lets user " +
                      std::to_string(other()) + " write)");
  env_.acls.insert_or_assign(file, AclWriters{{::getuid(), 0}, {}});  // this user and root
  EXPECT_EQ(reason(file), std::nullopt);
  env_.acls.insert_or_assign(file, AclWriters{{}, {4242}});
  why = reason(file);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("its ACL lets group 4242 write"), std::string::npos) << *why;
  env_.private_groups.insert(4242);  // a group of this user alone
  EXPECT_EQ(reason(file), std::nullopt);
  env_.acls.insert_or_assign(file, Status::io_error("cannot read the ACL"));
  why = reason(file);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("its ACL cannot be read"), std::string::npos) << *why;
  env_.acls.erase(file);
  env_.acls.insert_or_assign(folder, AclWriters{{other()}, {}});
  why = reason(file);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "folder " + folder + " is writable by others (its ACL lets user " +
                      std::to_string(other()) + " write)");
}

// The same through the real file system's ACL (libacl), where it keeps
// them.
TEST_F(TrustedPathTest, ARealACLIsRead) {
  const std::string file = dir_ / "db/p.kdb";
  const std::string text = "u::rw-,u:" + std::to_string(other()) + ":rw-,g::r--,m::rw-,o::r--";
  acl_t acl = ::acl_from_text(text.c_str());
  ASSERT_NE(acl, nullptr);
  const int set = ::acl_set_file(file.c_str(), ACL_TYPE_ACCESS, acl);
  const int err = errno;
  ::acl_free(acl);
  if (set != 0 && (err == ENOTSUP || err == EOPNOTSUPP)) {
    GTEST_SKIP() << "this file system keeps no ACLs";
  }
  ASSERT_EQ(set, 0) << std::strerror(err);
  auto why = untrusted_reason(file, Env::posix());
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("its ACL lets user " + std::to_string(other()) + " write"), std::string::npos)
      << *why;
  // Under a mask without write, the named user cannot write.
  acl = ::acl_from_text(
      ("u::rw-,u:" + std::to_string(other()) + ":rw-,g::r--,m::r--,o::r--").c_str());
  ASSERT_EQ(::acl_set_file(file.c_str(), ACL_TYPE_ACCESS, acl), 0);
  ::acl_free(acl);
  EXPECT_EQ(untrusted_reason(file, Env::posix()), std::nullopt);
}

TEST_F(TrustedPathTest, AFileOfAnotherUserIsNot) {
  env_.owners[dir_ / "db/p.kdb"] = other();
  auto why = reason(dir_ / "db/p.kdb");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("owned by another user (uid " + std::to_string(other()) + ")"),
            std::string::npos)
      << *why;
  env_.owners[dir_ / "db/p.kdb"] = 0;  // root's is trusted
  EXPECT_EQ(reason(dir_ / "db/p.kdb"), std::nullopt);
}

// A group of this user alone (a user private group, where umask 002 makes
// folders group-writable) is no one else; any other group is.
TEST_F(TrustedPathTest, WritableByAGroupOfThisUserAloneIsNotWritableByOthers) {
  ::chmod((dir_ / "db").c_str(), 0775);
  ::chmod((dir_ / "db/p.kdb").c_str(), 0664);
  ASSERT_TRUE(reason(dir_ / "db/p.kdb").has_value());
  env_.private_groups.insert(::getgid());
  EXPECT_EQ(reason(dir_ / "db/p.kdb"), std::nullopt);
  ::chmod((dir_ / "db").c_str(), 0777);  // others are others still
  EXPECT_TRUE(reason(dir_ / "db/p.kdb").has_value());
}

// A path that is a folder (a folder of trusted keys) is named as one.
TEST_F(TrustedPathTest, AFolderIsNamedAsAFolder) {
  const std::string keys = dir_ / "keys";
  ASSERT_TRUE(fs::create_directory(keys));
  ::chmod(keys.c_str(), 0777);
  auto why = untrusted_reason(keys, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + keys + " is writable by others (mode 0777)"), std::string::npos)
      << *why;
}

// The user cache: the folder itself (after links) is held to the rule of
// the folder holding a file; one not made yet, to the rule of those above.
TEST_F(TrustedPathTest, ACacheFolderOthersCanWriteOrOwnIsNot) {
  const std::string cache = dir_ / "cache";
  ASSERT_TRUE(fs::create_directory(cache));
  ::chmod(cache.c_str(), 0700);
  EXPECT_EQ(untrusted_folder_reason(cache, env_), std::nullopt);
  ::chmod(cache.c_str(), 01777);  // sticky does not help: anyone can add a log
  auto why = untrusted_folder_reason(cache, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + cache + " is writable by others (mode 1777)"), std::string::npos)
      << *why;
  ::chmod(cache.c_str(), 0700);
  env_.owners[cache] = other();
  why = untrusted_folder_reason(cache, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("owned by another user"), std::string::npos) << *why;
}

TEST_F(TrustedPathTest, ACacheFolderReachedThroughALinkIsJudgedWhereItIs) {
  const std::string elsewhere = dir_ / "elsewhere";
  ASSERT_TRUE(fs::create_directory(elsewhere));
  ::chmod(elsewhere.c_str(), 0777);
  fs::create_directory_symlink(elsewhere, dir_ / "link");
  auto why = untrusted_folder_reason(dir_ / "link", env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + elsewhere + " is writable by others"), std::string::npos) << *why;
  ::chmod(elsewhere.c_str(), 0700);
  EXPECT_EQ(untrusted_folder_reason(dir_ / "link", env_), std::nullopt);  // a link of ours
  env_.owners[elsewhere] = other();
  EXPECT_TRUE(untrusted_folder_reason(dir_ / "link", env_).has_value());
}

TEST_F(TrustedPathTest, ACacheFolderNotMadeYetIsJudgedByTheFoldersAbove) {
  const std::string above = dir_ / "above";
  ASSERT_TRUE(fs::create_directory(above));
  ::chmod(above.c_str(), 0700);
  EXPECT_EQ(untrusted_folder_reason(above + "/a/b/cache", env_), std::nullopt);
  ::chmod(above.c_str(), 01777);  // a sticky folder keeps what is made in it ours
  EXPECT_EQ(untrusted_folder_reason(above + "/cache", env_), std::nullopt);
  ::chmod(above.c_str(), 0777);  // anyone could replace it once made
  auto why = untrusted_folder_reason(above + "/cache", env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("without the sticky bit"), std::string::npos) << *why;
}

// What is not a folder where the cache would be (/dev/zero, a FIFO, a file
// others may write) is no trust problem: nothing can be made beneath it,
// and the failure to make the folder says why. Its mode is no folder's
// (/dev/zero was called "a folder writable by others").
TEST_F(TrustedPathTest, WhatIsNotAFolderOnTheWayIsNoTrustProblem) {
  EXPECT_EQ(untrusted_folder_reason("/dev/zero/1.0", env_), std::nullopt);
  EXPECT_EQ(untrusted_folder_reason("/dev/zero", env_), std::nullopt);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0666), 0) << std::strerror(errno);
  ::chmod((dir_ / "fifo").c_str(), 0666);
  EXPECT_EQ(untrusted_folder_reason(dir_ / "fifo/1.0", env_), std::nullopt);
  write_file(dir_ / "file", "not a folder");
  ::chmod((dir_ / "file").c_str(), 0666);
  env_.owners[dir_ / "file"] = other();
  EXPECT_EQ(untrusted_folder_reason(dir_ / "file/1.0", env_), std::nullopt);
  // A folder above it is still held to the rule.
  ::chmod(dir_.path().c_str(), 0777);
  EXPECT_TRUE(untrusted_folder_reason(dir_ / "fifo/1.0", env_).has_value());
  ::chmod(dir_.path().c_str(), 0700);
}

// Whoever can write in the folder can add a package: its sticky bit does
// not help.
TEST_F(TrustedPathTest, AFolderOthersCanWriteInIsNot) {
  for (mode_t mode : {0777, 01777, 0775, 0757}) {
    ::chmod((dir_ / "db").c_str(), mode);
    auto why = reason(dir_ / "db/p.kdb");
    ASSERT_TRUE(why.has_value()) << std::oct << mode;
    EXPECT_NE(why->find("folder " + dir_ / "db" + " is writable by others"), std::string::npos)
        << *why;
  }
  ::chmod((dir_ / "db").c_str(), 0755);
  env_.owners[dir_ / "db"] = other();
  EXPECT_TRUE(reason(dir_ / "db/p.kdb").has_value());
}

// Above it, a folder others can write is safe only with the sticky bit
// (nobody then moves what another owns), as /tmp is.
TEST_F(TrustedPathTest, AFolderAboveNeedsTheStickyBitIfOthersWriteIt) {
  ::chmod(dir_.path().c_str(), 0777);
  auto why = reason(dir_ / "db/p.kdb");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("without the sticky bit"), std::string::npos) << *why;
  ::chmod(dir_.path().c_str(), 01777);
  EXPECT_EQ(reason(dir_ / "db/p.kdb"), std::nullopt);
  env_.owners[dir_.path()] = other();
  EXPECT_TRUE(reason(dir_ / "db/p.kdb").has_value());
}

TEST_F(TrustedPathTest, LinksAreCheckedThrough) {
  // The file itself may not be a link.
  fs::create_symlink(dir_ / "db/p.kdb", dir_ / "db/link.kdb");
  auto why = reason(dir_ / "db/link.kdb");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("is a symbolic link"), std::string::npos) << *why;

  // A folder reached through a link: the link's owner and the target's
  // folders count.
  write_file(dir_ / "open/p.kdb", "package");
  ::chmod((dir_ / "open/p.kdb").c_str(), 0644);
  ::chmod((dir_ / "open").c_str(), 0777);
  fs::create_directory_symlink(dir_ / "open", dir_ / "via");
  why = reason(dir_ / "via/p.kdb");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + dir_ / "open" + " is writable by others"), std::string::npos)
      << *why;
  ::chmod((dir_ / "open").c_str(), 0755);
  EXPECT_EQ(reason(dir_ / "via/p.kdb"), std::nullopt);
  env_.owners[dir_ / "via"] = other();  // its owner could point it elsewhere
  EXPECT_TRUE(reason(dir_ / "via/p.kdb").has_value());
}

// A key file may be named through links (a link to where keys are kept):
// each link counts as its owner's and its folder's, then the file it names
// (an audit's link planted by another user chose the trusted key).
TEST_F(TrustedPathTest, AFileNamedThroughLinksHoldsEachLinkToTheRule) {
  const std::string key = dir_ / "db/p.kdb";
  EXPECT_EQ(untrusted_reason_through_links(key, env_), std::nullopt);
  fs::create_directory(dir_ / "links");
  ::chmod((dir_ / "links").c_str(), 0755);
  const std::string link = dir_ / "links/key.pub";
  fs::create_symlink(key, link);
  EXPECT_EQ(untrusted_reason_through_links(link, env_), std::nullopt);
  // A second link, relative, to the first.
  const std::string again = dir_ / "links/again.pub";
  fs::create_symlink("key.pub", again);
  EXPECT_EQ(untrusted_reason_through_links(again, env_), std::nullopt);

  env_.owners[link] = other();  // another user's link
  auto why = untrusted_reason_through_links(again, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("link " + link + " is owned by another user"), std::string::npos) << *why;
  env_.owners.erase(link);

  env_.owners[dir_ / "links"] = other();  // in another user's folder
  why = untrusted_reason_through_links(link, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + dir_ / "links" + " is owned by another user"), std::string::npos)
      << *why;
  env_.owners.erase(dir_ / "links");

  // In a folder others can write: only with the sticky bit (as /tmp).
  ::chmod((dir_ / "links").c_str(), 0777);
  EXPECT_TRUE(untrusted_reason_through_links(link, env_).has_value());
  ::chmod((dir_ / "links").c_str(), 01777);
  EXPECT_EQ(untrusted_reason_through_links(link, env_), std::nullopt);

  // The file at the end is held to the file's rule.
  ::chmod(key.c_str(), 0666);
  why = untrusted_reason_through_links(link, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("file " + key + " is writable by others"), std::string::npos) << *why;
  ::chmod(key.c_str(), 0644);

  // A loop ends.
  fs::create_symlink(dir_ / "db/loop2", dir_ / "db/loop1");
  fs::create_symlink(dir_ / "db/loop1", dir_ / "db/loop2");
  why = untrusted_reason_through_links(dir_ / "db/loop1", env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("more than 16 links"), std::string::npos) << *why;
}

// A kernel manifest (appended to, its lines run by pack): the rule of a
// file named through links, but its folder may be one others write in with
// the sticky bit (no one else can replace the user's file there), and a
// file not made yet is judged by the folder it would be made in.
TEST_F(TrustedPathTest, AnAppendedFileMayLieInAStickyFolderOthersWrite) {
  const std::string folder = dir_ / "team";
  fs::create_directory(folder);
  const std::string manifest = folder + "/kernels.jsonl";
  std::string real;
  ::chmod(folder.c_str(), 01777);
  EXPECT_EQ(untrusted_appended_file_reason(manifest, env_, real), std::nullopt);  // not made yet
  EXPECT_EQ(real, manifest);
  write_file(manifest, "");
  ::chmod(manifest.c_str(), 0600);
  EXPECT_EQ(untrusted_appended_file_reason(manifest, env_, real), std::nullopt);
  // Made first by someone else: theirs.
  env_.owners[manifest] = other();
  auto why = untrusted_appended_file_reason(manifest, env_, real);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("file " + manifest + " is owned by another user"), std::string::npos) << *why;
  env_.owners.erase(manifest);
  // Without the sticky bit anyone could replace it, made or not.
  ::chmod(folder.c_str(), 0777);
  why = untrusted_appended_file_reason(manifest, env_, real);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("folder " + folder + " is writable by others without the sticky bit"),
            std::string::npos)
      << *why;
  fs::remove(manifest);
  EXPECT_TRUE(untrusted_appended_file_reason(manifest, env_, real).has_value());
  ::chmod(folder.c_str(), 0755);
  // In a folder that is not there: the open says so, not the rule.
  EXPECT_EQ(untrusted_appended_file_reason(dir_ / "none/kernels.jsonl", env_, real), std::nullopt);
}

TEST_F(TrustedPathTest, AnAppendedFileNamedThroughAnotherUsersLinkIsNot) {
  const std::string sticky = dir_ / "stick";
  fs::create_directory(sticky);
  ::chmod(sticky.c_str(), 01777);
  write_file(dir_ / "victim.txt", "victim line\n");
  const std::string planted = sticky + "/m.jsonl";
  fs::create_symlink(dir_ / "victim.txt", planted);
  std::string real;
  EXPECT_EQ(untrusted_appended_file_reason(planted, env_, real), std::nullopt);  // the user's own
  EXPECT_EQ(real, dir_ / "victim.txt");
  env_.owners[planted] = other();
  auto why = untrusted_appended_file_reason(planted, env_, real);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("link " + planted + " is owned by another user"), std::string::npos) << *why;
}

TEST_F(TrustedPathTest, AnOpenedFileIsJudgedAsTheOneOpened) {
  const std::string file = dir_ / "db/p.kdb";
  auto info = env_.file_info(file);
  ASSERT_TRUE(info.is_ok());
  EXPECT_EQ(untrusted_open_file_reason(file, info->id, env_), std::nullopt);
  auto why = untrusted_open_file_reason(file, FileId{info->id.device, info->id.inode + 1}, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("was replaced as it was opened"), std::string::npos) << *why;
  ::chmod(file.c_str(), 0646);
  why = untrusted_open_file_reason(file, info->id, env_);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("is writable by others (mode 0646)"), std::string::npos) << *why;
}

TEST_F(TrustedPathTest, RelativePathsAreCheckedFromTheWorkingFolder) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_ / "db");
  EXPECT_EQ(reason("p.kdb"), std::nullopt);
  ::chmod((dir_ / "db").c_str(), 0777);
  EXPECT_TRUE(reason("p.kdb").has_value());
  fs::current_path(before);
}

}  // namespace
}  // namespace kcache
