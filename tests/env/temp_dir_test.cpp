// TempDir: private scratch folders, and the reclaiming of those whose owner
// was killed before it could remove them.
#include "env/temp_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using testing::TempFolder;

bool exists_no_follow(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Sets TMPDIR for the life of the object.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const std::string& value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (old_) {
      ::setenv("TMPDIR", old_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;

 private:
  std::optional<std::string> old_;
};

// A child process that made a TempDir under `base` (with a file and a
// subfolder in it, as a compile would) and then waits to be killed.
struct Owner {
  pid_t pid = -1;
  std::string folder;

  Owner() = default;
  Owner(Owner&& other) noexcept
      : pid(std::exchange(other.pid, -1)), folder(std::move(other.folder)) {}
  Owner& operator=(Owner&&) = delete;
  ~Owner() {
    if (pid > 0) kill_and_reap();  // a test that stopped early
  }

  static Owner start(const std::string& base, const std::string& prefix) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    Owner owner;
    owner.pid = ::fork();
    if (owner.pid == 0) {
      ::close(ready[0]);
      ::setenv("TMPDIR", base.c_str(), 1);
      auto temp = TempDir::create(prefix);
      if (!temp) ::_exit(1);
      fs::create_directories(temp->path() + "/sub/deeper");
      testing::write_file(temp->path() + "/sub/deeper/output.bin", "binary");
      const std::string line = temp->path() + "\n";
      if (::write(ready[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        ::_exit(1);
      }
      for (;;) ::pause();  // until killed
    }
    ::close(ready[1]);
    char buffer[4096];
    std::string text;
    for (ssize_t n; (n = ::read(ready[0], buffer, sizeof buffer)) > 0;) {
      text.append(buffer, static_cast<std::size_t>(n));
      if (text.ends_with('\n')) break;
    }
    ::close(ready[0]);
    if (!text.empty()) text.pop_back();
    owner.folder = text;
    return owner;
  }

  void kill_and_reap() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
};

TEST(TempDirTest, IsPrivateHoldsItsLockAndIsRemoved) {
  TempFolder base;
  ScopedTmpdir tmpdir(base.path());
  std::string path;
  {
    auto temp = TempDir::create("kcache-compile-");
    ASSERT_TRUE(temp.is_ok()) << temp.status().to_string();
    path = temp->path();
    EXPECT_EQ(fs::path(path).parent_path(), fs::path(base.path()));
    struct stat st;
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    // The lock is held: another descriptor cannot take it.
    const std::string lock = path + "/" + kTempDirLockName;
    int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << lock;
    EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(errno, EWOULDBLOCK);
    ::close(fd);
    // The descriptor holding it is not passed on to the programs (compilers)
    // this process runs: it is close-on-exec.
    int holders = 0;
    for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
      std::error_code error;
      if (fs::read_symlink(entry.path(), error) != fs::path(lock)) continue;
      ++holders;
      const int held = std::stoi(entry.path().filename().string());
      EXPECT_NE(::fcntl(held, F_GETFD) & FD_CLOEXEC, 0);
    }
    EXPECT_EQ(holders, 1);
  }
  EXPECT_FALSE(exists_no_follow(path));
}

TEST(TempDirTest, FolderOfAKilledOwnerIsReclaimed) {
  TempFolder base;
  Owner owner = Owner::start(base.path(), "kcache-compile-");
  ASSERT_FALSE(owner.folder.empty());
  ASSERT_TRUE(exists_no_follow(owner.folder + "/sub/deeper/output.bin"));
  owner.kill_and_reap();
  ASSERT_TRUE(exists_no_follow(owner.folder)) << "SIGKILL leaves the folder behind";
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 1u);
  EXPECT_FALSE(exists_no_follow(owner.folder));
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 0u);
}

TEST(TempDirTest, FolderOfALiveOwnerIsKept) {
  TempFolder base;
  Owner owner = Owner::start(base.path(), "kcache-hip-");
  ASSERT_FALSE(owner.folder.empty());
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 0u);
  EXPECT_TRUE(exists_no_follow(owner.folder + "/sub/deeper/output.bin"));
  // This process's own folders are live too.
  ScopedTmpdir tmpdir(base.path());
  auto mine = TempDir::create("kcache-version-");
  ASSERT_TRUE(mine.is_ok()) << mine.status().to_string();
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 0u);
  EXPECT_TRUE(exists_no_follow(mine->path()));
  owner.kill_and_reap();
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 1u);
  EXPECT_FALSE(exists_no_follow(owner.folder));
  EXPECT_TRUE(exists_no_follow(mine->path()));
}

// The first TempDir::create of a process for a base reclaims it.
TEST(TempDirTest, CreateReclaimsTheBaseOnce) {
  TempFolder base;
  Owner first = Owner::start(base.path(), "kcache-cl-headers-");
  first.kill_and_reap();
  ScopedTmpdir tmpdir(base.path());
  {
    auto temp = TempDir::create("kcache-compile-");
    ASSERT_TRUE(temp.is_ok()) << temp.status().to_string();
  }
  EXPECT_FALSE(exists_no_follow(first.folder));
  // At most once per process: a folder abandoned later stays until the
  // next process (or an explicit reclaim).
  Owner second = Owner::start(base.path(), "kcache-compile-");
  second.kill_and_reap();
  {
    auto temp = TempDir::create("kcache-compile-");
    ASSERT_TRUE(temp.is_ok()) << temp.status().to_string();
  }
  EXPECT_TRUE(exists_no_follow(second.folder));
}

// A link named like a scratch folder, pointing at a folder that looks
// abandoned (an unlocked lock file), is neither followed nor removed.
TEST(TempDirTest, LinkNamedLikeAFolderIsNotFollowed) {
  TempFolder base;
  TempFolder victim;
  testing::write_file(victim / kTempDirLockName, "");
  testing::write_file(victim / "precious", "keep me");
  const std::string link = base / "kcache-compile-AbC123";
  ASSERT_EQ(::symlink(victim.path().c_str(), link.c_str()), 0);
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path(), std::chrono::seconds(0)), 0u);
  EXPECT_EQ(testing::read_file(victim / "precious"), "keep me");
  EXPECT_TRUE(exists_no_follow(link));
}

// Links inside an abandoned folder are removed as links: what they point
// at stays.
TEST(TempDirTest, LinksInsideAreRemovedNotFollowed) {
  TempFolder base;
  TempFolder victim;
  testing::write_file(victim / "precious", "keep me");
  Owner owner = Owner::start(base.path(), "kcache-compile-");
  ASSERT_EQ(::symlink(victim.path().c_str(), (owner.folder + "/escape").c_str()), 0);
  ASSERT_EQ(::symlink((victim / "precious").c_str(), (owner.folder + "/sub/file").c_str()), 0);
  owner.kill_and_reap();
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 1u);
  EXPECT_FALSE(exists_no_follow(owner.folder));
  EXPECT_EQ(testing::read_file(victim / "precious"), "keep me");
}

// A compiler may leave a folder it cannot be entered (mode 0).
TEST(TempDirTest, UnreadableSubfolderIsRemovedToo) {
  TempFolder base;
  Owner owner = Owner::start(base.path(), "kcache-compile-");
  ASSERT_EQ(::chmod((owner.folder + "/sub").c_str(), 0), 0);
  owner.kill_and_reap();
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 1u);
  EXPECT_FALSE(exists_no_follow(owner.folder));
}

// Folders without a lock (older kcache builds): reclaimed only with a
// prefix kcache used and once old enough; other names are never touched.
TEST(TempDirTest, UnlockedFoldersNeedAKnownPrefixAndAge) {
  TempFolder base;
  const auto make = [&](const std::string& name, bool old) {
    const std::string dir = base / name;
    fs::create_directories(dir + "/sub");
    testing::write_file(dir + "/sub/output.bin", "binary");
    if (old) {
      const struct timespec times[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
      EXPECT_EQ(::utimensat(AT_FDCWD, dir.c_str(), times, 0), 0);
    }
    return dir;
  };
  const std::string old_known = make("kcache-compile-Old123", true);
  const std::string old_hip = make("kcache-hip-Old456", true);
  const std::string fresh_known = make("kcache-compile-New123", false);
  const std::string old_unknown = make("kcache-test-Old789", true);
  const std::string not_ours = make("compile-Old123", true);
  const std::string bad_suffix = make("kcache-compile-Old1", true);
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path()), 2u);
  EXPECT_FALSE(exists_no_follow(old_known));
  EXPECT_FALSE(exists_no_follow(old_hip));
  EXPECT_TRUE(exists_no_follow(fresh_known));
  EXPECT_TRUE(exists_no_follow(old_unknown));
  EXPECT_TRUE(exists_no_follow(not_ours));
  EXPECT_TRUE(exists_no_follow(bad_suffix));
}

// A file named like a folder, and a base that cannot be read, are no
// problem.
TEST(TempDirTest, OddEntriesAreSkipped) {
  TempFolder base;
  testing::write_file(base / "kcache-compile-File12", "not a folder");
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base.path(), std::chrono::seconds(0)), 0u);
  EXPECT_TRUE(exists_no_follow(base / "kcache-compile-File12"));
  EXPECT_EQ(reclaim_abandoned_temp_dirs(base / "no-such-folder"), 0u);
}

}  // namespace
}  // namespace kcache
