// A kept scan is reused only while its probes would find what they found:
// first by stat-ing each, then, watched, by the watch's count of changes.
#include "inputs/scan_memo.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "env/change_watch.h"
#include "env/unique_fd.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

// The real file system, counting stamps, with a watch of its own.
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::posix()), watch_(make_change_watch(256)) {}
  Result<FileStamp> stamp(const std::string& path) const override {
    ++stamps;
    return target_.stamp(path);
  }
  ChangeWatch* change_watch() const override { return watch_.get(); }
  mutable std::atomic<int> stamps{0};

 private:
  std::unique_ptr<ChangeWatch> watch_;
};

class ScanMemoTest : public ::testing::Test {
 protected:
  const ScanInputs kInputs{"inputs", {"source"}};

  void SetUp() override {
    write_file(dir_ / "inc/x.h", "#define X 1\n");
    fs::create_directory(dir_ / "first");
    age(dir_ / "inc/x.h");
  }

  // A scanner keeps no scan of a file changed within a timestamp tick (an
  // edit in the same tick could leave its stamp as it was): the headers
  // here are older than that.
  static void age(const std::string& path) {
    fs::last_write_time(path, fs::last_write_time(path) - std::chrono::seconds(10));
  }

  // A scan that found inc/x.h and looked in first/ before.
  IncludeScan scan_of(const std::vector<std::string>& paths) {
    IncludeScan scan;
    for (const auto& path : paths) {
      auto stamp = env_.stamp(path);
      scan.probes.push_back({path, stamp.is_ok() ? std::optional(*stamp) : std::nullopt});
    }
    return scan;
  }

  // Finds the scan, counting the stamps it took.
  bool found(int* stamps = nullptr) {
    const int before = env_.stamps;
    const bool hit = memo_.find(kInputs, env_).scan != nullptr;
    if (stamps != nullptr) *stamps = env_.stamps - before;
    return hit;
  }

  // Keeps the scan and reuses it until the watch answers alone (and a
  // stamp of the working folder, for relative probes).
  void keep_and_watch(const std::vector<std::string>& paths, int watched_stamps = 0) {
    memo_.keep(kInputs, scan_of(paths));
    int stamps = 0;
    ASSERT_TRUE(found(&stamps));
    EXPECT_EQ(stamps, static_cast<int>(paths.size()));  // first reuse: stat only
    ASSERT_TRUE(found());                               // second: watched, then checked
    ASSERT_TRUE(found(&stamps));
    EXPECT_EQ(stamps, watched_stamps) << "a watched scan still stats its probes";
  }

  TempFolder dir_;
  CountingEnv env_;
  ScanMemo memo_;
};

TEST_F(ScanMemoTest, OnlyTheSameInputsFindAScan) {
  memo_.keep(kInputs, scan_of({dir_ / "inc/x.h"}));
  EXPECT_EQ(memo_.find(ScanInputs{"inputs", {"sourcE"}}, env_).scan, nullptr);
  EXPECT_EQ(memo_.find(ScanInputs{"inputs", {"source", ""}}, env_).scan, nullptr);
  EXPECT_EQ(memo_.find(ScanInputs{"inputs", {}}, env_).scan, nullptr);
  EXPECT_EQ(memo_.find(ScanInputs{"Inputs", {"source"}}, env_).scan, nullptr);
  EXPECT_NE(memo_.find(ScanInputs{"inputs", {"source"}}, env_).scan, nullptr);
}

TEST_F(ScanMemoTest, AWatchedScanStatsNothingUntilAnEdit) {
  keep_and_watch({dir_ / "first/x.h", dir_ / "inc/x.h"});
  write_file(dir_ / "inc/x.h", "#define X 2\n");
  EXPECT_FALSE(found()) << "an edited header kept its scan";
}

TEST_F(ScanMemoTest, AShadowingHeaderEndsAWatchedScan) {
  keep_and_watch({dir_ / "first/x.h", dir_ / "inc/x.h"});
  write_file(dir_ / "first/x.h", "#define X 3\n");
  EXPECT_FALSE(found());
}

TEST_F(ScanMemoTest, AnUnrelatedChangeCostsOneCheckAndNoScan) {
  keep_and_watch({dir_ / "first/x.h", dir_ / "inc/x.h"});
  // A change the watch counts (the folder itself) that leaves every probe
  // as it was: the stamps are checked again and the scan stays.
  ::chmod((dir_ / "inc").c_str(), 0755);
  int stamps = 0;
  EXPECT_TRUE(found(&stamps));
  EXPECT_EQ(stamps, 2);
  EXPECT_TRUE(found(&stamps));
  EXPECT_EQ(stamps, 0);
}

TEST_F(ScanMemoTest, RelativeProbesFollowTheWorkingFolder) {
  write_file(dir_ / "other/inc/x.h", "#define X 9\n");
  age(dir_ / "other/inc/x.h");
  const fs::path before = fs::current_path();
  fs::current_path(dir_.path());
  keep_and_watch({"inc/x.h"}, 1);
  fs::current_path(dir_ / "other");
  EXPECT_FALSE(found()) << "a relative probe was trusted in another working folder";
  fs::current_path(before);
}

TEST_F(ScanMemoTest, WhatCannotBeWatchedStaysOnTheStatCheck) {
  fs::create_directory_symlink(dir_ / "inc", dir_ / "link");
  memo_.keep(kInputs, scan_of({dir_ / "link/x.h"}));
  for (int reuse = 0; reuse < 4; ++reuse) {
    int stamps = 0;
    ASSERT_TRUE(found(&stamps));
    EXPECT_EQ(stamps, 1);
  }
  write_file(dir_ / "inc/x.h", "#define X 4\n");
  EXPECT_FALSE(found());
}

// A write through a shared mapping sends no inotify event; the stat check
// that runs at least every ScanMemo::kRecheckAfter catches it then.
TEST_F(ScanMemoTest, AWriteThroughAMappingIsCaughtWithinTheRecheckTime) {
  keep_and_watch({dir_ / "inc/x.h"});
  UniqueFd fd(::open((dir_ / "inc/x.h").c_str(), O_RDWR));
  ASSERT_GE(fd.get(), 0);
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  static_cast<char*>(map)[10] = '7';
  ::munmap(map, 4096);
  // Not synchronisation: the bound itself is what is tested.
  std::this_thread::sleep_for(ScanMemo::kRecheckAfter + std::chrono::milliseconds(100));
  EXPECT_FALSE(found()) << "a mapped write outlived the recheck time";
}

}  // namespace
}  // namespace kcache
