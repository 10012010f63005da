// remove_abandoned_temporaries: what a writer killed before its rename
// left beside a file, and nothing else.
#include "env/abandoned_temporaries.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::names_in;
using testing::TempFolder;

// The pid of a process that has ended (a child, waited for).
pid_t ended_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// `path`, written and then made `age_seconds` old.
void make_file(const std::string& path, long age_seconds) {
  testing::write_file(path, "half a package");
  struct timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec -= age_seconds;
  times[1] = times[0];
  ASSERT_EQ(::utimes(path.c_str(), times), 0);
}

TEST(AbandonedTemporariesTest, OnlyAGoneWritersOldTemporaryOfThatFileIsRemoved) {
  TempFolder dir;
  const std::string gone = std::to_string(ended_pid());
  const std::string alive = std::to_string(::getpid());
  make_file(dir / ("pkg.kdb.tmp." + gone + ".0.17"), 3600);   // abandoned
  make_file(dir / ("pkg.kdb.tmp." + gone + ".1.5"), 0);       // written to just now
  make_file(dir / ("pkg.kdb.tmp." + alive + ".0.1"), 3600);   // its writer runs
  make_file(dir / ("other.kdb.tmp." + gone + ".0.1"), 3600);  // another file's
  make_file(dir / ("pkg.kdb.tmp." + gone), 3600);             // not a temporary's name
  make_file(dir / "target", 3600);
  std::filesystem::create_symlink(dir / "target", dir / ("pkg.kdb.tmp." + gone + ".2.2"));

  EXPECT_EQ(remove_abandoned_temporaries(Env::posix(), dir / "pkg.kdb"), 1u);
  EXPECT_EQ(
      names_in(dir.path()),
      (std::vector<std::string>{"other.kdb.tmp." + gone + ".0.1", "pkg.kdb.tmp." + alive + ".0.1",
                                "pkg.kdb.tmp." + gone, "pkg.kdb.tmp." + gone + ".1.5",
                                "pkg.kdb.tmp." + gone + ".2.2", "target"}));
  // A folder that cannot be read, or a path without a file name: nothing.
  EXPECT_EQ(remove_abandoned_temporaries(Env::posix(), dir / "missing/pkg.kdb"), 0u);
  EXPECT_EQ(remove_abandoned_temporaries(Env::posix(), dir.path() + "/"), 0u);
}

}  // namespace
}  // namespace kcache
