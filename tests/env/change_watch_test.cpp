// The change watch against the real kernel: every change a lookup depends
// on raises the count, changes it does not depend on leave it, and what
// cannot be watched is refused.
#include "env/change_watch.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

class ChangeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    watch_ = make_change_watch(256);
    write_file(dir_ / "inc/x.h", "#define X 1\n");
  }

  std::uint64_t changes() {
    auto count = watch_->changes();
    EXPECT_TRUE(count.has_value());
    return count.value_or(0);
  }

  // Watches `path`, then runs `change` and says whether the count rose.
  bool seen(const std::string& path, const std::function<void()>& change) {
    EXPECT_TRUE(watch_->watch(path)) << path;
    const std::uint64_t before = changes();
    change();
    return changes() != before;
  }

  TempFolder dir_;
  std::unique_ptr<ChangeWatch> watch_;
};

TEST_F(ChangeWatchTest, AnEditOfTheFileIsSeen) {
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { write_file(dir_ / "inc/x.h", "#define X 2\n"); }));
}

TEST_F(ChangeWatchTest, NothingChangedCountsNothing) {
  ASSERT_TRUE(watch_->watch(dir_ / "inc/x.h"));
  const std::uint64_t before = changes();
  EXPECT_EQ(changes(), before);
  // Reading the file is no change.
  (void)testing::read_file(dir_ / "inc/x.h");
  EXPECT_EQ(changes(), before);
}

TEST_F(ChangeWatchTest, OtherFilesInTheFolderDoNotCount) {
  EXPECT_FALSE(seen(dir_ / "inc/x.h", [&] {
    write_file(dir_ / "inc/other.h", "x");
    write_file(dir_ / "unrelated", "y");
    fs::remove(dir_ / "inc/other.h");
  }));
}

TEST_F(ChangeWatchTest, AFileAppearingWhereNoneWasIsSeen) {
  EXPECT_TRUE(seen(dir_ / "inc/missing.h", [&] { write_file(dir_ / "inc/missing.h", "x"); }));
}

TEST_F(ChangeWatchTest, AFolderAppearingOnTheWayIsSeen) {
  EXPECT_TRUE(seen(dir_ / "new/deeper/x.h", [&] { fs::create_directory(dir_ / "new"); }));
}

TEST_F(ChangeWatchTest, ARenamedFolderAboveIsSeen) {
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] {
    fs::rename(dir_.path(), dir_.path() + ".moved");
    fs::create_directories(dir_ / "inc");
    write_file(dir_ / "inc/x.h", "#define X 1\n");
  }));
  fs::remove_all(dir_.path() + ".moved");
}

TEST_F(ChangeWatchTest, AReplacementByRenameIsSeen) {
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] {
    write_file(dir_ / "inc/x.h.tmp", "#define X 3\n");
    fs::rename(dir_ / "inc/x.h.tmp", dir_ / "inc/x.h");
  }));
}

TEST_F(ChangeWatchTest, AnEditThroughAnotherHardLinkIsSeen) {
  fs::create_directory(dir_ / "elsewhere");
  fs::create_hard_link(dir_ / "inc/x.h", dir_ / "elsewhere/x.h");
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { write_file(dir_ / "elsewhere/x.h", "changed\n"); }));
}

TEST_F(ChangeWatchTest, APermissionChangeIsSeen) {
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { ::chmod((dir_ / "inc/x.h").c_str(), 0600); }));
}

TEST_F(ChangeWatchTest, ARemovedFileIsSeenAndWatchedAgainWhenItReturns) {
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { fs::remove(dir_ / "inc/x.h"); }));
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { write_file(dir_ / "inc/x.h", "back\n"); }));
  EXPECT_TRUE(seen(dir_ / "inc/x.h", [&] { write_file(dir_ / "inc/x.h", "edited\n"); }));
}

TEST_F(ChangeWatchTest, RelativePathsAreWatchedFromTheWorkingFolder) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_.path());
  EXPECT_TRUE(seen("inc/x.h", [&] { write_file(dir_ / "inc/x.h", "#define X 4\n"); }));
  fs::current_path(before);
}

TEST_F(ChangeWatchTest, LinksAndParentStepsOnTheWayAreRefused) {
  fs::create_directory_symlink(dir_ / "inc", dir_ / "link");
  EXPECT_FALSE(watch_->watch(dir_ / "link/x.h"));
  fs::create_symlink(dir_ / "inc/x.h", dir_ / "inc/y.h");
  EXPECT_FALSE(watch_->watch(dir_ / "inc/y.h"));
  EXPECT_FALSE(watch_->watch(dir_ / "inc/../inc/x.h"));
}

TEST_F(ChangeWatchTest, TheBudgetIsKept) {
  auto small = make_change_watch(4);
  // "/", the folders above the test folder, the folder, "inc", x.h: more
  // than four watches.
  EXPECT_FALSE(small->watch(dir_ / "inc/x.h"));
  EXPECT_TRUE(small->changes().has_value());
}

// A forked child must not take the parent's events: they would be lost to
// the parent, which would then trust a file that changed.
TEST(ChangeWatchForkTest, AChildNeverTakesTheParentsEvents) {
  TempFolder dir;
  write_file(dir / "x.h", "1\n");
  ChangeWatch* watch = process_change_watch();
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->watch(dir / "x.h"));
  const auto before = watch->changes();
  ASSERT_TRUE(before.has_value());
  write_file(dir / "x.h", "2\n");  // queued, not yet taken in
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ChangeWatch* own = process_change_watch();
    const bool fine = own->changes().has_value() && own->watch(dir / "x.h");
    ::_exit(fine ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(watch->changes(), before) << "the parent lost the edit to its child";
}

// A mount over a folder on the way changes what every path below it names
// and sends no inotify event: the mount table's own event must count. In a
// child with a mount namespace of its own (as root, or in a user namespace
// where the kernel allows one), so nothing outside sees the mount.
TEST(ChangeWatchMountTest, AMountOverAWatchedFolderIsSeen) {
  TempFolder dir;
  write_file(dir / "inc/x.h", "1\n");
  const std::string folder = dir / "inc";
  const std::string file = dir / "inc/x.h";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(77);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(77);
    auto watch = make_change_watch(64);
    if (!watch->watch(file)) ::_exit(2);
    const auto before = watch->changes();
    if (!before || watch->changes() != before) ::_exit(3);  // nothing moved yet
    if (::mount("none", folder.c_str(), "tmpfs", 0, nullptr) != 0) ::_exit(77);
    ::_exit(watch->changes() != before ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no mount namespace can be made here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the mount was not counted; 2, 3: the watch failed";
}

}  // namespace
}  // namespace kcache
