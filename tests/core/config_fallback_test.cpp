// The private fallback folder: used when the default cache folder cannot be
// (HOME unset, or the folder cannot be created), never a shared one, and
// refused when someone else could have made it.
#include <kcache/version.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/config.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::FaultEnv;
using testing::FaultOp;
using testing::TempFolder;

class FallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env.vars["TMPDIR"] = tmp.path() + "/";  // a trailing slash is fine
    env.home.reset();
  }
  ResolvedConfig resolve() { return resolve_config({}, env); }
  std::string root() const { return tmp / ("kcache-" + std::to_string(env.user_id())); }
  static std::string version() { return KCACHE_VERSION_STRING; }

  // A resolution that refused the fallback folder: no user cache, one
  // warning naming the reason.
  void expect_refused(const std::string& reason) {
    ResolvedConfig config = resolve();
    EXPECT_TRUE(config.enabled);
    EXPECT_TRUE(config.user_dir.empty()) << config.user_dir;
    EXPECT_NE(config.find("cache_dir")->origin.rfind("fallback", 0), 0u);
    ASSERT_EQ(config.warnings.size(), 1u);
    EXPECT_NE(config.warnings[0].find("the fallback folder is refused"), std::string::npos)
        << config.warnings[0];
    EXPECT_NE(config.warnings[0].find(reason), std::string::npos) << config.warnings[0];
  }

  TempFolder tmp;
  FaultEnv env;
};

TEST_F(FallbackTest, CreatedPrivateAndReused) {
  ResolvedConfig config = resolve();
  EXPECT_EQ(config.user_dir, root() + "/" + version());
  EXPECT_EQ(config.find("cache_dir")->value, root());
  EXPECT_EQ(config.find("cache_dir")->origin, "fallback (HOME is not set)");
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("private fallback folder " + root()), std::string::npos);
  struct stat st;
  ASSERT_EQ(::lstat(root().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::getuid());
  // The next process finds it as it left it, and uses it.
  EXPECT_EQ(resolve().user_dir, root() + "/" + version());
}

TEST_F(FallbackTest, WorldWritableFolderIsRefused) {
  std::filesystem::create_directory(root());
  ::chmod(root().c_str(), 0777);
  expect_refused("has mode 0777, not 0700");
  // Refused, not "fixed": its mode is left alone.
  struct stat st;
  ASSERT_EQ(::lstat(root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
}

TEST_F(FallbackTest, GroupReadableFolderIsRefused) {
  std::filesystem::create_directory(root());
  ::chmod(root().c_str(), 0750);
  expect_refused("has mode 0750");
}

TEST_F(FallbackTest, SymbolicLinkIsRefused) {
  std::filesystem::create_directory(tmp / "elsewhere");
  ::chmod((tmp / "elsewhere").c_str(), 0700);
  std::filesystem::create_directory_symlink(tmp / "elsewhere", root());
  expect_refused(root() + " is a symbolic link");
  std::filesystem::remove(root());
  std::filesystem::create_directory_symlink(tmp / "nowhere", root());  // dangling
  expect_refused(root());
}

TEST_F(FallbackTest, FileIsRefused) {
  testing::write_file(root(), "");
  expect_refused(root());
}

TEST_F(FallbackTest, FolderOfAnotherUserIsRefused) {
  // This process plays uid 4242; the folder is owned by the real user.
  env.uid = 4242;
  std::filesystem::create_directory(root());
  ::chmod(root().c_str(), 0700);
  expect_refused("belongs to uid " + std::to_string(::getuid()) + ", not to this user (uid 4242)");
}

TEST_F(FallbackTest, UncreatableFolderIsRefused) {
  env.inject(FaultOp::kMkdir, root(), EACCES);
  expect_refused("Permission denied");
}

// The default folder exists but cannot be created under a read-only home,
// or under a file: fall back. A folder the user chose never does.
TEST_F(FallbackTest, UnwritableDefaultFallsBackButAChosenFolderDoesNot) {
  TempFolder home;
  env.home = home.path();
  env.inject(FaultOp::kAccess, home.path(), EROFS);
  ResolvedConfig config = resolve();
  EXPECT_EQ(config.user_dir, root() + "/" + version());
  EXPECT_EQ(config.find("cache_dir")->origin, "fallback (default not writable)");
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("Read-only file system"), std::string::npos);

  env.vars["XDG_CACHE_HOME"] = home / "xdg";
  EXPECT_EQ(resolve().user_dir, root() + "/" + version());

  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = home / "chosen";
  config = resolve();
  EXPECT_EQ(config.user_dir, home / "chosen/" + version());
  EXPECT_TRUE(config.warnings.empty());
}

// The real file system's answer, through Env::posix().
TEST_F(FallbackTest, RealCheckSeesAFileInTheWay) {
  TempFolder home;
  env.home = home.path();
  env.real_writable_check = true;
  EXPECT_EQ(resolve().user_dir, home / ".cache/kcache/" + version());
  testing::write_file(home / ".cache", "a file where a folder belongs");
  ResolvedConfig config = resolve();
  EXPECT_EQ(config.user_dir, root() + "/" + version());
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find(home / ".cache is not a directory"), std::string::npos)
      << config.warnings[0];
}

}  // namespace
}  // namespace kcache
