#include "upkeep/stats_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "fakes/temp_folder.h"
#include "format/entry.h"
#include "upkeep/stats_counters.h"

namespace kcache {
namespace {

using testing::TempFolder;

TEST(StatsFileTest, EveryMappingAddsToTheSameTotals) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  EXPECT_EQ(StatsFile::open(Env::posix(), path, false).status().code(), StatusCode::kNotFound);
  auto one = StatsFile::open(Env::posix(), path, true);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  auto two = StatsFile::open(Env::posix(), path, false);  // another process, say
  ASSERT_TRUE(two.is_ok());
  (*one)->shard_for(1)[static_cast<std::size_t>(Stat::kRequests)] += 3;
  (*two)->shard_for(2)[static_cast<std::size_t>(Stat::kRequests)] += 4;
  (*two)->shard_for(33)[static_cast<std::size_t>(Stat::kUserHits)] += 5;  // shares pid 1's shard
  EXPECT_EQ((*one)->totals()[static_cast<std::size_t>(Stat::kRequests)], 7u);
  EXPECT_EQ((*one)->totals()[static_cast<std::size_t>(Stat::kUserHits)], 5u);
  EXPECT_GT((*one)->created_unix(), 0);
  (*two)->zero(12345);
  EXPECT_EQ((*one)->totals()[static_cast<std::size_t>(Stat::kRequests)], 0u);
  EXPECT_EQ((*one)->zeroed_unix(), 12345);
}

TEST(StatsFileTest, CountsFromManyProcessesAddUp) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  constexpr int kProcesses = 8;
  constexpr int kCounts = 20000;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Every child makes the file if it is not there yet: one file results.
      StatsCounters counters;
      auto file = StatsFile::open(Env::posix(), path, true);
      if (!file) ::_exit(3);
      counters.share(std::move(*file));
      for (int i = 0; i < kCounts; ++i) counters.add(Stat::kRequests);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto file = StatsFile::open(Env::posix(), path, false);
  ASSERT_TRUE(file.is_ok());
  EXPECT_EQ((*file)->totals()[static_cast<std::size_t>(Stat::kRequests)],
            std::uint64_t{kProcesses} * kCounts);
}

TEST(StatsFileTest, CountsMadeBeforeSharingAreNotLost) {
  TempFolder dir;
  StatsCounters counters;
  counters.add(Stat::kCompiles, 2);
  auto file = StatsFile::open(Env::posix(), dir / "kcache.stats", true);
  ASSERT_TRUE(file.is_ok());
  counters.share(std::move(*file));
  counters.add(Stat::kCompiles);
  auto again = StatsFile::open(Env::posix(), dir / "kcache.stats", false);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ((*again)->totals()[static_cast<std::size_t>(Stat::kCompiles)], 3u);
  EXPECT_EQ(counters.local(Stat::kCompiles), 3u);
}

TEST(StatsFileTest, WhatIsNotAStatsFileIsRefusedOrReplaced) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  std::ofstream(path) << "not a stats file";
  EXPECT_EQ(StatsFile::open(Env::posix(), path, false).status().code(), StatusCode::kCorruption);
  auto made = StatsFile::open(Env::posix(), path, true);
  ASSERT_TRUE(made.is_ok()) << made.status().to_string();
  EXPECT_EQ((*made)->totals()[0], 0u);
  // A link where the file belongs is never followed.
  std::filesystem::remove(path);
  std::filesystem::create_symlink(dir / "elsewhere", path);
  EXPECT_FALSE(StatsFile::open(Env::posix(), path, false).is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));
}

// The files quarantine/ holds, by name.
std::vector<std::string> quarantined(const TempFolder& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& e : std::filesystem::directory_iterator(dir / "quarantine", error)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Whatever stands in the file's place: said as what it is (reading never
// hangs on a FIFO, never follows a link), then, when a file is to be made,
// moved into quarantine/ (never written through) and a new file made. A
// folder or a FIFO there failed `kcache stats` and `stats --zero` until
// someone removed it.
TEST(StatsFileTest, AFolderAFifoOrALinkInItsPlaceIsSaidThenSetAside) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  testing::write_file(dir / "target", "someone's file");
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"a folder", [&] { std::filesystem::create_directory(path); }},
      {"not a regular file", [&] { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0); }},
      {"a symbolic link", [&] { std::filesystem::create_symlink(dir / "target", path); }},
  };
  for (const auto& [what, make] : cases) {
    make();
    auto read = StatsFile::open(Env::posix(), path, /*create=*/false);
    EXPECT_EQ(read.status().code(), StatusCode::kCorruption) << what;
    EXPECT_NE(read.status().message().find(path + " is " + what), std::string::npos)
        << read.status().message();
    std::vector<std::string> told;
    auto made = StatsFile::open(Env::posix(), path, /*create=*/true, 0600,
                                [&](const std::string& where, const std::string& why) {
                                  told.push_back(where + ": " + why);
                                });
    ASSERT_TRUE(made.is_ok()) << what << ": " << made.status().to_string();
    EXPECT_EQ((*made)->totals()[0], 0u);
    ASSERT_EQ(told.size(), 1u) << what;
    EXPECT_NE(told[0].find(path + ": " + path + " is " + what), std::string::npos) << told[0];
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path))) << what;
    std::filesystem::remove(path);
  }
  EXPECT_EQ(quarantined(dir).size(), 3u);
  EXPECT_EQ(testing::read_file(dir / "target"), "someone's file");  // never written through
}

// Counts no process could have made (crafted to 2^64 - 1) are not shown as
// counts: the file is said to be damaged, and replaced when one is made.
TEST(StatsFileTest, CountsNoProcessCouldHaveMadeAreRefused) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  {
    auto made = StatsFile::open(Env::posix(), path, true);
    ASSERT_TRUE(made.is_ok());
    (*made)->shard_for(3)[static_cast<std::size_t>(Stat::kRequests)] = ~std::uint64_t{0};
  }
  auto read = StatsFile::open(Env::posix(), path, false);
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_NE(read.status().message().find("counts no process could have made (requests " +
                                         std::to_string(~std::uint64_t{0})),
            std::string::npos)
      << read.status().message();
  // Two large halves: their sum is refused, not wrapped.
  auto again = StatsFile::open(Env::posix(), path, true);
  ASSERT_TRUE(again.is_ok());
  (*again)->shard_for(1)[static_cast<std::size_t>(Stat::kBytesServed)] = std::uint64_t{3} << 61;
  (*again)->shard_for(2)[static_cast<std::size_t>(Stat::kBytesServed)] = std::uint64_t{3} << 61;
  EXPECT_EQ(StatsFile::open(Env::posix(), path, false).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(quarantined(dir).size(), 1u);
}

// A lock file that is not one (a folder, a link) stopped every process
// from sharing its counts, silently: it is set aside, and the file made.
TEST(StatsFileTest, ALockFileThatIsNotOneIsSetAside) {
  TempFolder dir;
  const std::string path = dir / "kcache.stats";
  for (int link = 0; link < 2; ++link) {
    if (link) {
      std::filesystem::create_symlink(dir / "elsewhere", path + ".lock");
    } else {
      std::filesystem::create_directory(path + ".lock");
    }
    std::vector<std::string> told;
    auto made = StatsFile::open(Env::posix(), path, true, 0600,
                                [&](const std::string& where, const std::string& why) {
                                  told.push_back(where + ": " + why);
                                });
    ASSERT_TRUE(made.is_ok()) << made.status().to_string();
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("not a lock file"), std::string::npos) << told[0];
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path + ".lock")));
    EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));  // not made through the link
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".lock");
  }
  EXPECT_EQ(quarantined(dir).size(), 2u);
}

TEST(StatsFileTest, EveryCountHasAName) {
  for (std::size_t i = 0; i < kStatCount; ++i) {
    EXPECT_FALSE(stat_name(static_cast<Stat>(i)).empty()) << i;
  }
  EXPECT_EQ(stat_name(Stat::kRequests), "requests");
  EXPECT_EQ(compile_micros_of({{"compile_us", "1234"}}), 1234u);
  EXPECT_EQ(compile_micros_of({{"compile_us", "12x"}}), std::nullopt);
  EXPECT_EQ(compile_micros_of({}), std::nullopt);
}

}  // namespace
}  // namespace kcache
