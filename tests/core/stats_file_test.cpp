#include "core/stats_file.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/stats_counters.h"
#include "fakes/temp_folder.h"
#include "format/entry.h"

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
