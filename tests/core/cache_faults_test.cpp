// Faults met through the Env, and damaged files, seen from the facade: the
// program always gets its kernel, with exactly one warning per cause, and
// nothing half-written is left behind (no temporary file, no empty entry).
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "core/cache_internal.h"
#include "fakes/cache_fixture.h"
#include "fakes/fake_compiler.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::FakeCompiler;
using testing::FaultEnv;
using testing::FaultOp;
using testing::TempFolder;

class CacheFaultTest : public testing::CacheFixture {
 protected:
  void SetUp() override {
    CacheFixture::SetUp();
    env.vars["TMPDIR"] = dir / "tmp";
    std::filesystem::create_directories(dir / "home");
    std::filesystem::create_directories(dir / "system");
    std::filesystem::create_directories(dir / "tmp");
    compiler.binary_size = 20000;  // several writes' worth
  }

  // Compiles each source with a new cache (a new process) and checks that
  // the kernel came back, from `tier`.
  void expect_kernels(const std::vector<std::string>& sources, TierKind tier) {
    auto cache = open();
    for (const auto& source : sources) {
      auto kernel = cache->get_or_compile(request(source), compiler);
      ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
      EXPECT_EQ(kernel->tier, tier) << source;
      const std::string bytes(kernel->binary().begin(), kernel->binary().end());
      EXPECT_NE(bytes.find("|" + source + "]"), std::string::npos);
    }
  }

  // The warnings given, but for the missing system package that every
  // test here has (a separate cause).
  std::vector<std::string> warnings() {
    std::lock_guard lock(log_mutex);
    std::vector<std::string> out;
    for (const auto& line : log) {
      if (line.starts_with("kcache: Warning") &&
          line.find("Missing system database file") == std::string::npos) {
        out.push_back(line);
      }
    }
    return out;
  }

  std::string one_warning() {
    auto all = warnings();
    EXPECT_EQ(all.size(), 1u) << ::testing::PrintToString(all);
    return all.empty() ? std::string() : all[0];
  }

  // What a failed write must not leave: temporary files and empty entries.
  static std::vector<std::string> leftovers(const std::string& root) {
    std::vector<std::string> found;
    if (!std::filesystem::exists(root)) return found;
    for (const auto& f : std::filesystem::recursive_directory_iterator(root)) {
      const std::string name = f.path().filename().string();
      if (name.find(".tmp.") != std::string::npos ||
          (f.is_regular_file() && f.file_size() == 0 && name.size() == 64)) {
        found.push_back(f.path().string());
      }
    }
    return found;
  }

  // Every path under `root` with its size, to show nothing changed.
  static std::vector<std::string> snapshot(const std::string& root) {
    std::vector<std::string> out;
    for (const auto& f : std::filesystem::recursive_directory_iterator(root)) {
      out.push_back(f.path().string() + " " +
                    (f.is_regular_file() ? std::to_string(f.file_size()) : "dir"));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string user_dir() const { return dir / ("cache/" KCACHE_VERSION_STRING); }
  void unreadable_log_is_compiled_again(int err);
};

// A failed write of the log (creating it, or appending an entry): ENOSPC
// after a part was written, fsync, close or rename failing, a quota: one
// warning, the kernels are served, no temporary file is left, an append
// is cut off again (the log is as it was), and the next process compiles.
TEST_F(CacheFaultTest, FailedEntryWritesLeaveNothingBehind) {
  struct Case {
    FaultOp op;
    int err;
    std::uint64_t after_bytes;
    std::string expected;
    bool log_exists;  // the fault meets an append, not the log's creation
  };
  int round = 0;
  for (const Case& c : {Case{FaultOp::kWrite, ENOSPC, 4096, "No space left on device", true},
                        Case{FaultOp::kWrite, ENOSPC, 0, "No space left on device", true},
                        Case{FaultOp::kSync, EIO, 0, "cannot sync", true},
                        Case{FaultOp::kWrite, ENOSPC, 10, "No space left on device", false},
                        Case{FaultOp::kSync, EIO, 0, "cannot sync", false},
                        Case{FaultOp::kClose, EIO, 0, "cannot close", false},
                        Case{FaultOp::kRename, EIO, 0, "cannot rename", false},
                        Case{FaultOp::kCreate, EDQUOT, 0, "quota exceeded", false}}) {
    SCOPED_TRACE(c.expected + (c.log_exists ? " (append)" : " (creation)"));
    // A folder per round: warnings are once per process and folder.
    const std::string cache_dir = dir / ("cache" + std::to_string(++round));
    const std::string log_file = cache_dir + "/" KCACHE_VERSION_STRING "/gfx906_60.ukdb";
    env.vars["KCACHE_CUSTOM_CACHE_DIR"] = cache_dir;
    env.clear_faults();
    if (c.log_exists) expect_kernels({"seed"}, TierKind::kCompiled);
    const auto size_before = c.log_exists ? std::filesystem::file_size(log_file) : 0;
    log.clear();
    env.inject(c.op, ".ukdb", c.err, c.after_bytes);
    {
      auto cache = open();
      for (const char* source : {"a", "b", "c"}) {
        auto kernel = cache->get_or_compile(request(source), compiler);
        ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
        EXPECT_EQ(kernel->tier, TierKind::kCompiled);
      }
      EXPECT_EQ(cache->stats().store_failures, 3u);
    }
    const std::string warning = one_warning();
    EXPECT_NE(warning.find("kcache: Warning [UserDb] Cannot write to the user cache"),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find(c.expected), std::string::npos) << warning;
    EXPECT_TRUE(leftovers(cache_dir).empty()) << ::testing::PrintToString(leftovers(cache_dir));
    if (c.log_exists) {
      EXPECT_EQ(std::filesystem::file_size(log_file), size_before);
    } else {
      EXPECT_FALSE(std::filesystem::exists(log_file));
    }
    EXPECT_GE(env.faults_met(), 3);
    env.clear_faults();
    expect_kernels({"a", "b"}, TierKind::kCompiled);
    expect_kernels({"a", "b"}, TierKind::kUser);
    auto report = CacheAdmin(*open()).verify();
    ASSERT_TRUE(report.is_ok());
    EXPECT_TRUE(report->problems.empty()) << report->problems[0].problem;
  }
}

// A read-only file system under a populated cache: hits are served, a miss
// is compiled, one warning, and nothing on disk changes.
TEST_F(CacheFaultTest, ReadOnlyFileSystemServesHitsAndCompilesMisses) {
  expect_kernels({"a", "b"}, TierKind::kCompiled);
  const auto before = snapshot(dir / "cache");
  env.read_only(dir / "cache");
  log.clear();
  expect_kernels({"a", "b"}, TierKind::kUser);
  expect_kernels({"new", "newer"}, TierKind::kCompiled);
  expect_kernels({"new"}, TierKind::kCompiled);
  EXPECT_NE(one_warning().find("Read-only file system"), std::string::npos);
  EXPECT_EQ(snapshot(dir / "cache"), before);
}

// EACCES on opening the log: a miss, and the write after the compile
// reports it (one cause, one warning). EIO on reading it: one warning, the
// kernel is compiled, served and stored again. Either way the warning
// names the file. (Warnings are once per process; ctest runs each test in
// its own.)
void CacheFaultTest::unreadable_log_is_compiled_again(int err) {
  expect_kernels({"a"}, TierKind::kCompiled);
  const std::string log_file = user_dir() + "/gfx906_60.ukdb";
  log.clear();
  env.inject(err == EACCES ? FaultOp::kOpen : FaultOp::kRead, log_file, err);
  expect_kernels({"a"}, TierKind::kCompiled);
  expect_kernels({"a"}, TierKind::kCompiled);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find(log_file), std::string::npos) << warning;
  EXPECT_NE(warning.find(std::strerror(err)), std::string::npos) << warning;
  env.clear_faults();
  expect_kernels({"a"}, TierKind::kUser);
  EXPECT_TRUE(leftovers(dir / "cache").empty());
}

TEST_F(CacheFaultTest, LogThatCannotBeOpenedIsCompiledAgainWithOneWarning) {
  unreadable_log_is_compiled_again(EACCES);
}

TEST_F(CacheFaultTest, LogThatCannotBeReadIsCompiledAgainWithOneWarning) {
  unreadable_log_is_compiled_again(EIO);
}

// A system package that fails every read once it is open (a dying disk):
// after five failures in a row the system tier is skipped
// (store/guarded_tier.h), so later requests do not reach it at all; one
// warning, and every kernel still comes back.
TEST_F(CacheFaultTest, ATierThatKeepsFailingIsSkippedNotCalledEachTime) {
  std::vector<std::string> sources;
  for (int i = 0; i < 12; ++i) sources.push_back("k" + std::to_string(i));
  expect_kernels(sources, TierKind::kCompiled);
  const std::string package = dir / "system/gfx906_60.kdb";
  {
    auto cache = open();
    ASSERT_TRUE(CacheAdmin(*cache).export_db("gfx906_60", package).is_ok());
  }
  std::filesystem::remove_all(user_dir());
  auto cache = open();
  ASSERT_EQ(cache->get_or_compile(request("k0"), compiler)->tier, TierKind::kSystem);
  log.clear();
  env.inject(FaultOp::kRead, package, EIO);
  std::vector<int> faults_after;
  for (std::size_t i = 1; i < sources.size(); ++i) {
    auto kernel = cache->get_or_compile(request(sources[i]), compiler);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
    EXPECT_EQ(kernel->tier, TierKind::kCompiled);
    faults_after.push_back(env.faults_met());
  }
  EXPECT_EQ(faults_after[0], 1) << "the fault was not met";
  EXPECT_EQ(faults_after.back(), 5) << ::testing::PrintToString(faults_after);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find(std::strerror(EIO)), std::string::npos) << warning;
}

// A cache folder this process may not enter or write (chmod 000, another
// user's): the reads are misses, not errors, so the one warning is the
// write's.
TEST_F(CacheFaultTest, InaccessibleCacheFolderGivesOneWarning) {
  expect_kernels({"a"}, TierKind::kCompiled);
  log.clear();
  for (FaultOp op : {FaultOp::kOpen, FaultOp::kMkdir, FaultOp::kCreate, FaultOp::kAccess,
                     FaultOp::kLock, FaultOp::kList}) {
    env.inject(op, dir / "cache", EACCES);
  }
  expect_kernels({"a", "b", "c"}, TierKind::kCompiled);
  expect_kernels({"a"}, TierKind::kCompiled);
  EXPECT_NE(one_warning().find("Permission denied"), std::string::npos);
}

// KCACHE_CUSTOM_CACHE_DIR names a regular file: one warning, every compile
// goes on, the file is untouched.
TEST_F(CacheFaultTest, CacheDirThatIsAFileGivesOneWarning) {
  testing::write_file(dir / "file", "not a folder");
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "file";
  expect_kernels({"a", "b"}, TierKind::kCompiled);
  expect_kernels({"a"}, TierKind::kCompiled);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find("kcache: Warning [UserDb] Cannot write to the user cache " +
                         dir / "file/" KCACHE_VERSION_STRING),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("is not a directory"), std::string::npos) << warning;
  EXPECT_EQ(testing::read_file(dir / "file"), "not a folder");
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "file"));
}

// The default folder (~/.cache/kcache) is a file, or on a read-only home:
// the private fallback folder is used, with one warning, and it caches.
TEST_F(CacheFaultTest, UnusableDefaultFolderFallsBackToAPrivateOne) {
  env.vars.erase("KCACHE_CUSTOM_CACHE_DIR");
  env.real_writable_check = true;
  testing::write_file(dir / "home/.cache/kcache", "a file");
  const std::string fallback = dir / ("tmp/kcache-" + std::to_string(::getuid()));
  expect_kernels({"a"}, TierKind::kCompiled);
  expect_kernels({"a"}, TierKind::kUser);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find("kcache: Warning [Config] The cache folder " +
                         dir / "home/.cache/kcache/" KCACHE_VERSION_STRING " cannot be created"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("private fallback folder " + fallback), std::string::npos) << warning;
  auto cache = open();
  EXPECT_EQ(cache->config().user_dir, fallback + "/" KCACHE_VERSION_STRING);
  EXPECT_EQ(cache->config().find("cache_dir")->origin, "fallback (default not writable)");
  struct stat st;
  ASSERT_EQ(::lstat(fallback.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(testing::read_file(dir / "home/.cache/kcache"), "a file");

  // A read-only home: the same.
  std::filesystem::remove(dir / "home/.cache/kcache");
  env.inject(FaultOp::kAccess, dir / "home", EROFS);
  EXPECT_EQ(open()->config().user_dir, fallback + "/" KCACHE_VERSION_STRING);
  // A version folder that exists is used as it is, read-only or not: it
  // may hold hits.
  std::filesystem::create_directories(dir / "home/.cache/kcache/" KCACHE_VERSION_STRING);
  EXPECT_EQ(open()->config().user_dir, dir / "home/.cache/kcache/" KCACHE_VERSION_STRING);
}

// HOME unset and a fallback folder someone else made first (world-writable,
// or a symbolic link to their folder): refused, with one warning; kernels
// are compiled and nothing is read from or written to it.
TEST_F(CacheFaultTest, FallbackFolderMadeBySomeoneElseIsRefused) {
  env.vars.erase("KCACHE_CUSTOM_CACHE_DIR");
  env.home.reset();
  const std::string fallback = dir / ("tmp/kcache-" + std::to_string(::getuid()));
  std::filesystem::create_directories(fallback);
  ::chmod(fallback.c_str(), 0777);
  expect_kernels({"a"}, TierKind::kCompiled);
  expect_kernels({"a"}, TierKind::kCompiled);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find("HOME is not set"), std::string::npos) << warning;
  EXPECT_NE(warning.find("the fallback folder is refused (" + fallback + " has mode 0777"),
            std::string::npos)
      << warning;
  EXPECT_TRUE(std::filesystem::is_empty(fallback));
  EXPECT_EQ(CacheAdmin(*open()).list().status().code(), StatusCode::kUnavailable);

  std::filesystem::remove(fallback);
  std::filesystem::create_directories(dir / "theirs");
  ::chmod((dir / "theirs").c_str(), 0700);
  std::filesystem::create_directory_symlink(dir / "theirs", fallback);
  log.clear();
  expect_kernels({"a"}, TierKind::kCompiled);
  EXPECT_NE(one_warning().find(fallback + " is a symbolic link"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir / "theirs"));
}

// A cache on NFS: one warning (every hit reads over the network), and the
// cache works.
TEST_F(CacheFaultTest, NetworkFileSystemWarnsOnceAndStillCaches) {
  env.file_systems[dir / "cache"] = {FileSystemKind::kNetwork, "nfs"};
  expect_kernels({"a", "b"}, TierKind::kCompiled);
  expect_kernels({"a", "b"}, TierKind::kUser);
  const std::string warning = one_warning();
  EXPECT_NE(warning.find("kcache: Warning [UserDb] The user cache " + user_dir() +
                         " is on a network file system (nfs)"),
            std::string::npos)
      << warning;
  EXPECT_EQ(CacheAdmin(*open()).list()->size(), 2u);
}

// A damaged hint is derived data: rebuilt from the log without a warning,
// and every entry is still a hit.
TEST_F(CacheFaultTest, DamagedHintIsRebuiltWithoutLosingEntries) {
  expect_kernels({"a", "b", "c"}, TierKind::kCompiled);
  testing::write_file(user_dir() + "/gfx906_60.ukdx", std::string(9000, 'x'));
  log.clear();
  expect_kernels({"a", "b", "c"}, TierKind::kUser);
  EXPECT_TRUE(warnings().empty()) << ::testing::PrintToString(warnings());
  auto report = CacheAdmin(*open()).verify();
  ASSERT_TRUE(report.is_ok());
  for (const auto& p : report->problems) ADD_FAILURE() << p.path << ": " << p.problem;
  EXPECT_EQ(report->entries_ok, 3u);
}

// A log that is garbage: one warning names it, it is moved to quarantine/,
// and the kernels are compiled again into a new log.
TEST_F(CacheFaultTest, GarbageLogGivesOneWarningAndIsReplaced) {
  expect_kernels({"a", "b", "c"}, TierKind::kCompiled);
  testing::write_file(user_dir() + "/gfx906_60.ukdb", std::string(9000, 'x'));
  log.clear();
  auto cache = open();
  for (const char* source : {"a", "b", "c"}) {
    EXPECT_EQ(cache->get_or_compile(request(source), compiler)->tier, TierKind::kCompiled);
  }
  const std::string warning = one_warning();
  EXPECT_NE(warning.find("kcache: Warning [Integrity] Bad user cache file " + user_dir() +
                         "/gfx906_60.ukdb"),
            std::string::npos)
      << warning;
  EXPECT_EQ(cache->stats().corrupt_entries, 1u);
  EXPECT_EQ(CacheAdmin(*cache).list()->size(), 3u);
  auto report = CacheAdmin(*cache).verify();
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(report->problems.empty());
  int moved = 0;
  for (const auto& f : std::filesystem::directory_iterator(user_dir() + "/quarantine")) {
    moved += f.path().filename().string().starts_with("gfx906_60.gfx906_60.ukdb.") ? 1 : 0;
  }
  EXPECT_EQ(moved, 1);
  expect_kernels({"a", "b", "c"}, TierKind::kUser);
}

// A system package that is garbage, or that cannot be opened: the compile
// goes on, one warning names the file (and no "Missing ..."), verify lists
// it and cannot repair it.
TEST_F(CacheFaultTest, BadSystemPackageGivesOneWarning) {
  testing::write_file(dir / "system/gfx906_60.kdb", std::string(200, 'g'));
  {
    auto cache = open();
    EXPECT_EQ(cache->get_or_compile(request("a"), compiler)->tier, TierKind::kCompiled);
    EXPECT_EQ(cache->get_or_compile(request("b"), compiler)->tier, TierKind::kCompiled);
    EXPECT_EQ(cache->stats().corrupt_entries, 1u);
    auto report = CacheAdmin(*cache).verify({.repair = true});
    ASSERT_TRUE(report.is_ok());
    ASSERT_EQ(report->problems.size(), 1u);
    EXPECT_EQ(report->problems[0].path, dir / "system/gfx906_60.kdb");
    EXPECT_FALSE(report->problems[0].repaired);
  }
  std::string warning = one_warning();
  EXPECT_NE(warning.find(dir / "system/gfx906_60.kdb"), std::string::npos) << warning;
  EXPECT_NE(warning.find("bad magic"), std::string::npos) << warning;
  for (const auto& line : log) EXPECT_EQ(line.find("Missing"), std::string::npos) << line;

  std::filesystem::remove(dir / "system/gfx906_60.kdb");
  std::filesystem::create_directories(dir / "system/gfx906.kdb");  // a folder
  env.vars["KCACHE_SYSTEM_DB_PATH"] = dir / "system";
  log.clear();
  expect_kernels({"c"}, TierKind::kCompiled);
  warning = one_warning();
  EXPECT_NE(warning.find("kcache: Warning [SystemDb] System database file " +
                         dir / "system/gfx906.kdb is unreadable and is ignored"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace kcache
