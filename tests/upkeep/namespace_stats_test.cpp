#include "upkeep/namespace_stats.h"

#include <gtest/gtest.h>

#include <fstream>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

// Counts two processes added to their shards of each namespace's file,
// read back by name, whatever the name holds of the file names' own
// words ("stats", "lock").
TEST(NamespaceStatsTest, EachNamespacesFileIsReadBackByItsName) {
  TempFolder dir;
  for (const char* name : {"triton", "a.lock", "x.stats", "kcache.stats"}) {
    const std::string path = namespace_stats_path(dir.path(), name);
    auto one = StatsFile::open(Env::posix(), path, /*create=*/true);
    ASSERT_TRUE(one.is_ok()) << one.status().to_string();
    auto two = StatsFile::open(Env::posix(), path, /*create=*/false);
    ASSERT_TRUE(two.is_ok());
    NamespaceCounts counts;
    counts.gets = 3;
    counts.hits = 2;
    counts.puts = 1;
    counts.bytes_served = 100;
    add_namespace_counts((*one)->shard_for(1), counts);
    add_namespace_counts((*two)->shard_for(2), counts);
  }
  // Neither a lock file nor the folder's own stats file is a namespace's.
  std::ofstream(dir / "kcache.stats") << "";
  std::ofstream(dir / "kcache.stats.client..stats") << "";

  auto read = read_namespace_stats(Env::posix(), dir.path());
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  ASSERT_EQ(read->size(), 4u);
  EXPECT_EQ((*read)[0].name, "a.lock");
  EXPECT_EQ((*read)[1].name, "kcache.stats");
  EXPECT_EQ((*read)[2].name, "triton");
  EXPECT_EQ((*read)[3].name, "x.stats");
  for (const NamespaceCounts& n : *read) {
    EXPECT_EQ(n.gets, 6u) << n.name;
    EXPECT_EQ(n.hits, 4u) << n.name;
    EXPECT_EQ(n.puts, 2u) << n.name;
    EXPECT_EQ(n.waits, 0u) << n.name;
    EXPECT_EQ(n.bytes_served, 200u) << n.name;
  }

  ASSERT_TRUE(zero_namespace_stats(Env::posix(), dir.path()).is_ok());
  read = read_namespace_stats(Env::posix(), dir.path());
  ASSERT_TRUE(read.is_ok());
  for (const NamespaceCounts& n : *read) EXPECT_EQ(n.gets, 0u) << n.name;
}

// A file that is not a stats file where a namespace's belongs is left out,
// and a folder that does not exist holds no namespaces.
TEST(NamespaceStatsTest, WhatIsNotAStatsFileIsLeftOut) {
  TempFolder dir;
  std::ofstream(namespace_stats_path(dir.path(), "bad")) << "not a stats file";
  auto read = read_namespace_stats(Env::posix(), dir.path());
  ASSERT_TRUE(read.is_ok());
  EXPECT_TRUE(read->empty());
  auto none = read_namespace_stats(Env::posix(), dir / "missing");
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace kcache
