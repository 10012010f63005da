// The facade: tier order, single flight, disable, failures that must not
// fail a request, corruption recovery.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "core/cache_internal.h"
#include "fakes/cache_fixture.h"
#include "fakes/fake_compiler.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"
#include "fakes/user_log_files.h"

namespace kcache {
namespace {

using testing::FakeCompiler;
using testing::FaultEnv;
using testing::TempFolder;

class CacheTest : public testing::CacheFixture {
 protected:
  std::string dir_path() const { return dir.path(); }
};

std::string bytes_of(const CachedKernel& kernel) {
  return {kernel.binary().begin(), kernel.binary().end()};
}

// A hit on the copy in memory is a use of the entry on disk: the user
// tier's use table learns it, so eviction keeps what a long-running
// process keeps using.
// Whether what is compiled can be kept, asked before compiling many
// kernels (kcache pack): the folder is made; one that is a file, one
// another user could write and a disabled cache each say why not.
TEST_F(CacheTest, CheckStorableMakesTheFolderOrSaysWhyNot) {
  const std::string folder = dir_path() + "/cache";
  ASSERT_FALSE(std::filesystem::exists(folder));
  EXPECT_TRUE(CacheAdmin(*open()).check_storable().is_ok());
  EXPECT_TRUE(std::filesystem::is_directory(folder)) << "the folder is made";

  std::filesystem::remove_all(folder);
  { std::ofstream(folder) << "a file"; }
  Status file = CacheAdmin(*open()).check_storable();
  EXPECT_FALSE(file.is_ok());
  std::filesystem::remove(folder);

  std::filesystem::create_directories(folder);
  std::filesystem::permissions(folder, std::filesystem::perms::all);
  Status open_to_all = CacheAdmin(*open()).check_storable();
  ASSERT_FALSE(open_to_all.is_ok());
  EXPECT_NE(open_to_all.message().find("another user could have written it"), std::string::npos)
      << open_to_all.message();

  CacheOptions off;
  off.disable_cache = true;
  Status disabled = CacheAdmin(*open(off)).check_storable();
  ASSERT_FALSE(disabled.is_ok());
  EXPECT_NE(disabled.message().find("disabled"), std::string::npos) << disabled.message();
}

TEST_F(CacheTest, AMemoryHitKeepsTheEntryOnDiskWarm) {
  constexpr std::int64_t kStart = 1'800'000'000;
  env.now = kStart;
  auto cache = open();
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  env.now = kStart + 7200;  // two hours on, in the same process
  auto again = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kMemory);
  auto listed = CacheAdmin(*open()).list();
  ASSERT_TRUE(listed.is_ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].last_used_unix, (kStart + 7200) / 60 * 60);
  EXPECT_EQ((*listed)[0].created_unix, kStart);
}

// A user-tier hit lends a view of the mapped log, but what the memory
// tier keeps of it is a copy: an edit of the log in place afterwards
// reaches neither later memory hits nor a fresh process (which finds the
// damage and compiles again).
TEST_F(CacheTest, TheMemoryCopyOfAUserHitIsItsOwn) {
  env.map_files = true;
  auto first = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  const std::string binary = bytes_of(*first);
  auto cache = open();
  auto user = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(user.is_ok());
  ASSERT_EQ(user->tier, TierKind::kUser);
  const std::string log_path = dir / "cache/" KCACHE_VERSION_STRING "/gfx906_60.ukdb";
  std::string content;
  {
    std::ifstream in(log_path, std::ios::binary);
    content.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t at = content.rfind(binary);
  ASSERT_NE(at, std::string::npos);
  testing::overwrite(log_path, at, std::string(1, static_cast<char>(~binary[0])));
  std::filesystem::last_write_time(
      log_path, std::filesystem::last_write_time(log_path) + std::chrono::seconds(2));
  auto again = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kMemory);
  EXPECT_EQ(bytes_of(*again), binary);
  auto fresh = open();
  auto rebuilt = fresh->get_or_compile(request(), compiler);
  ASSERT_TRUE(rebuilt.is_ok());
  EXPECT_EQ(rebuilt->tier, TierKind::kCompiled);
  EXPECT_EQ(bytes_of(*rebuilt), binary);
  EXPECT_EQ(fresh->stats().corrupt_entries, 1u);
}

TEST_F(CacheTest, MissThenMemoryThenUserHit) {
  auto cache = open();
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->tier, TierKind::kCompiled);
  EXPECT_EQ(first->db, "gfx906_60");
  EXPECT_EQ(first->compile_log, "fake log");
  EXPECT_EQ(first->metadata(kFormatField), "fake");

  auto second = cache->get_or_compile(request(), compiler);
  EXPECT_EQ(second->tier, TierKind::kMemory);
  EXPECT_EQ(bytes_of(*second), bytes_of(*first));

  auto fresh = open();  // a new process: memory is empty
  auto third = fresh->get_or_compile(request(), compiler);
  EXPECT_EQ(third->tier, TierKind::kUser);
  EXPECT_EQ(third->key, first->key);
  EXPECT_EQ(bytes_of(*third), bytes_of(*first));
  EXPECT_EQ(third->metadata(kFormatField), "fake");
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(fresh->stats().user_hits, 1u);
  EXPECT_TRUE(std::filesystem::exists(dir / "cache/" KCACHE_VERSION_STRING "/gfx906_60.ukdb"));
}

TEST_F(CacheTest, DifferentRequestsDifferentEntries) {
  auto cache = open();
  auto a = cache->get_or_compile(request("a"), compiler);
  auto b = cache->get_or_compile(request("b"), compiler);
  EXPECT_NE(a->key, b->key);
  EXPECT_NE(bytes_of(*a), bytes_of(*b));
  EXPECT_EQ(compiler.compiles, 2);
}

TEST_F(CacheTest, SystemTierIsLookedUpBeforeUser) {
  {
    auto cache = open();
    ASSERT_TRUE(cache->get_or_compile(request(), compiler).is_ok());
    std::filesystem::create_directories(dir / "system");
    auto written = CacheAdmin(*cache).export_db("gfx906_60", dir / "system/gfx906_60.kdb");
    ASSERT_TRUE(written.is_ok()) << written.status().to_string();
    EXPECT_EQ(*written, 1u);
  }
  auto cache = open();
  auto hit = cache->get_or_compile(request(), compiler);
  EXPECT_EQ(hit->tier, TierKind::kSystem);
  EXPECT_EQ(compiler.compiles, 1);
  // An arch-wide package serves any unit count.
  std::filesystem::rename(dir / "system/gfx906_60.kdb", dir / "system/gfx906.kdb");
  auto other_units = request();
  other_units.target.units = 64;
  auto arch_hit = open()->get_or_compile(other_units, compiler);
  EXPECT_EQ(arch_hit->tier, TierKind::kSystem);
  EXPECT_EQ(arch_hit->db, "gfx906_64");
}

TEST_F(CacheTest, DisabledCacheCompilesEveryTimeAndTouchesNoDisk) {
  env.vars["KCACHE_DISABLE_CACHE"] = "Yes";
  auto cache = open();
  for (int i = 0; i < 3; ++i) {
    auto kernel = cache->get_or_compile(request(), compiler);
    ASSERT_TRUE(kernel.is_ok());
    EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  }
  EXPECT_EQ(compiler.compiles, 3);
  EXPECT_EQ(env.writes, 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "cache"));
  EXPECT_TRUE(log.empty()) << log[0];  // no missing-package warning either
  EXPECT_EQ(CacheAdmin(*cache).list().status().code(), StatusCode::kUnavailable);
}

TEST_F(CacheTest, CompileErrorIsReturnedWithItsLogAndRemembered) {
  auto cache = open();
  auto failed = cache->get_or_compile(request("#error nope"), compiler);
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kCompileError);
  EXPECT_NE(failed.status().details().find("#error found"), std::string::npos);
  EXPECT_EQ(cache->stats().compile_failures, 1u);

  // A new process does not compile it again: the error and its log are
  // answered from the negative cache. No binary is stored.
  auto later = open();
  auto again = later->get_or_compile(request("#error nope"), compiler);
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), StatusCode::kCompileError);
  EXPECT_NE(again.status().message().find("remembered"), std::string::npos);
  EXPECT_NE(again.status().details().find("#error found"), std::string::npos);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(later->stats().failure_hits, 1u);
  auto listed = CacheAdmin(*later).list();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].backend, "fake");
  EXPECT_TRUE((*listed)[0].failure);

  // Forgotten on request: compiled (and failing) again.
  EXPECT_EQ(*CacheAdmin(*later).clear_failures(), 1u);
  EXPECT_FALSE(open()->get_or_compile(request("#error nope"), compiler).is_ok());
  EXPECT_EQ(compiler.compiles, 2);
  // A fixed source is a different key: it compiles.
  EXPECT_TRUE(open()->get_or_compile(request("fixed"), compiler).is_ok());
}

TEST_F(CacheTest, RememberedFailuresExpire) {
  env.vars["KCACHE_FAILURE_TTL"] = "10m";
  env.now = 1'000'000;
  EXPECT_FALSE(open()->get_or_compile(request("#error x"), compiler).is_ok());
  env.now = 1'000'000 + 9 * 60;
  EXPECT_FALSE(open()->get_or_compile(request("#error x"), compiler).is_ok());
  EXPECT_EQ(compiler.compiles, 1);
  env.now = 1'000'000 + 11 * 60;
  EXPECT_FALSE(open()->get_or_compile(request("#error x"), compiler).is_ok());
  EXPECT_EQ(compiler.compiles, 2);
}

TEST_F(CacheTest, ZeroTtlDoesNotRememberFailures) {
  env.vars["KCACHE_FAILURE_TTL"] = "0";
  EXPECT_FALSE(open()->get_or_compile(request("#error x"), compiler).is_ok());
  EXPECT_FALSE(open()->get_or_compile(request("#error x"), compiler).is_ok());
  EXPECT_EQ(compiler.compiles, 2);
  EXPECT_TRUE(CacheAdmin(*open()).list()->empty());
}

// Only compile errors are remembered: a compiler that could not run may
// run next time.
TEST_F(CacheTest, UnavailableCompilerIsNotRemembered) {
  class Unavailable : public Compiler {
   public:
    const CompilerIdentity& identity() const override { return id; }
    Result<Target> resolve_target(const Target& t) const override { return t; }
    Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
      ++calls;
      return Status::unavailable("the compiler library vanished");
    }
    CompilerIdentity id{"gone", "g", "1"};
    int calls = 0;
  } unavailable;
  EXPECT_FALSE(open()->get_or_compile(request(), unavailable).is_ok());
  EXPECT_FALSE(open()->get_or_compile(request(), unavailable).is_ok());
  EXPECT_EQ(unavailable.calls, 2);
}

TEST_F(CacheTest, UnsupportedTargetIsInvalidArgument) {
  auto cache = open();
  auto r = request();
  r.target = Target{"unsupported", "", 0};
  EXPECT_EQ(cache->get_or_compile(r, compiler).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(compiler.compiles, 0);
}

TEST_F(CacheTest, UnwritableCacheWarnsOnceAndStillCompiles) {
  env.fail_mkdir = Status::io_error("cannot create directory: Permission denied");
  auto cache = open();
  for (int i = 0; i < 3; ++i) {
    auto kernel = cache->get_or_compile(request(std::to_string(i)), compiler);
    ASSERT_TRUE(kernel.is_ok());
    EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  }
  EXPECT_EQ(log_lines_containing("kcache: Warning [UserDb] Cannot write to the user cache"), 1);
  EXPECT_EQ(cache->stats().store_failures, 3u);
}

TEST_F(CacheTest, FullDiskWarnsOnceAndStillCompiles) {
  env.fail_writes = Status::io_error("cannot write: No space left on device");
  auto cache = open();
  auto kernel = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(kernel.is_ok());
  EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  EXPECT_EQ(log_lines_containing("No space left on device"), 1);
  // Nothing half-written is left for the next process to trip over.
  env.fail_writes.reset();
  auto later = open()->get_or_compile(request(), compiler);
  EXPECT_EQ(later->tier, TierKind::kCompiled);
}

TEST_F(CacheTest, UnreadableCacheIsSkippedWithAWarning) {
  {
    auto cache = open();
    ASSERT_TRUE(cache->get_or_compile(request(), compiler).is_ok());
  }
  env.fail_reads = Status::io_error("read: Input/output error");
  auto kernel = open()->get_or_compile(request(), compiler);
  ASSERT_TRUE(kernel.is_ok());
  EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  EXPECT_GE(log_lines_containing("Input/output error"), 1);
}

TEST_F(CacheTest, NoHomeStillCompiles) {
  env.vars.erase("KCACHE_CUSTOM_CACHE_DIR");
  env.vars["TMPDIR"] = dir / "tmp";
  env.home.reset();
  auto cache = open();
  auto kernel = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(kernel.is_ok());
  EXPECT_EQ(log_lines_containing("HOME is not set"), 1);
  EXPECT_EQ(log.size(), 2u);  // that, and the missing system package
  // Kept in the private fallback folder (tests/core/cache_faults_test.cpp).
  EXPECT_EQ(CacheAdmin(*cache).list()->size(), 1u);
  EXPECT_EQ(open()->get_or_compile(request(), compiler)->tier, TierKind::kUser);
}

TEST_F(CacheTest, CorruptUserEntryIsRecompiledCountedAndQuarantined) {
  CacheKey key;
  {
    auto cache = open();
    key = cache->get_or_compile(request(), compiler)->key;
  }
  const std::string log_file = dir / "cache/" KCACHE_VERSION_STRING "/gfx906_60.ukdb";
  auto record = testing::newest_record(log_file, key);
  ASSERT_TRUE(record.has_value());
  testing::overwrite(log_file, record->offset + 90, std::string(1, '\0'));
  auto cache = open();
  auto kernel = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(kernel.is_ok());
  EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  EXPECT_EQ(cache->stats().corrupt_entries, 1u);
  EXPECT_EQ(compiler.compiles, 2);
  EXPECT_EQ(log_lines_containing("kcache: Warning [Integrity]"), 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "cache/" KCACHE_VERSION_STRING "/quarantine"));
  EXPECT_EQ(open()->get_or_compile(request(), compiler)->tier, TierKind::kUser);
}

// An entry whose bytes are valid but whose key material is not the
// request's (a forged or misplaced file) is never served.
TEST_F(CacheTest, EntryWithOtherKeyMaterialIsNotServed) {
  CacheKey key_a;
  CacheKey key_b;
  {
    auto cache = open();
    key_a = cache->get_or_compile(request("a"), compiler)->key;
    key_b = cache->get_or_compile(request("b"), compiler)->key;
  }
  // Point a's hint record at b's entry, fixing nothing else: the entry's
  // key then disagrees with the key looked up. b's bytes are never served
  // for a; a's own record, which the log still holds, is (the hint was
  // what was wrong, store/user/user_reader.h).
  const std::string base = dir / "cache/" KCACHE_VERSION_STRING "/gfx906_60";
  auto record_b = testing::newest_record(base + ".ukdb", key_b);
  ASSERT_TRUE(record_b.has_value());
  testing::append_hint(base + ".ukdx", {key_a, record_b->offset, record_b->size});
  auto cache = open();
  auto kernel = cache->get_or_compile(request("a"), compiler);
  EXPECT_EQ(kernel->tier, TierKind::kUser);
  EXPECT_NE(bytes_of(*kernel).find("|a]"), std::string::npos);
  EXPECT_EQ(bytes_of(*kernel).find("|b]"), std::string::npos);
  EXPECT_EQ(cache->stats().corrupt_entries, 0u);
}

// Polls until `done()` holds; false after `limit` (generous: only a broken
// cache takes that long). For events the cache does not signal.
template <typename Done>
bool eventually(Done done, std::chrono::milliseconds limit = FakeCompiler::kWaitLimit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll, not a guess
  }
  return true;
}

// The leader's compile is held until all 8 requests are inside the cache,
// so the other 7 arrive while it runs. They must be served by this
// process's leader: none may reach the cross-process lock (which would
// also give one compile, by reading the leader's entry from the user tier).
TEST_F(CacheTest, ManyThreadsOneKeyCompileOnce) {
  constexpr int kThreads = 8;
  auto cache = open();
  compiler.close_gate();
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::vector<TierKind> tiers;
  std::atomic<int> right_bytes{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      auto kernel = cache->get_or_compile(request(), compiler);
      if (!kernel.is_ok()) return;
      if (bytes_of(*kernel).find("kernel void k") != std::string::npos) ++right_bytes;
      std::lock_guard lock(mutex);
      tiers.push_back(kernel->tier);
    });
  }
  EXPECT_TRUE(compiler.wait_until_running(1));
  EXPECT_TRUE(eventually([&] { return cache->stats().requests == kThreads; }));
  compiler.open_gate();
  for (auto& t : threads) t.join();
  EXPECT_EQ(right_bytes, kThreads);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(std::count(tiers.begin(), tiers.end(), TierKind::kCompiled), 1);
  EXPECT_EQ(env.busy_key_locks(), 0);
  EXPECT_FALSE(compiler.gate_expired);
}

// Every request counted is answered as one thing stats shows: a hit of a
// tier, a compile (or a failed one), or a compile error answered without
// compiling.
std::uint64_t answered(const CacheStats& s) {
  return s.memory_hits + s.system_hits + s.user_hits + s.compiles + s.compile_failures +
         s.failure_hits;
}

// The threads that waited for the leader's compile are memory hits (the
// tier their kernel says it came from): requests add up to what answered
// them (they were counted as neither hits nor compiles, and the hit rate
// read low).
TEST_F(CacheTest, ThreadsServedByAnotherThreadsCompileAreMemoryHits) {
  constexpr int kThreads = 8;
  auto cache = open();
  compiler.close_gate();
  std::vector<std::thread> threads;
  std::atomic<int> from_memory{0};
  std::atomic<std::size_t> binary_size{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      auto kernel = cache->get_or_compile(request(), compiler);
      if (!kernel.is_ok()) return;
      binary_size = kernel->binary().size();
      if (kernel->tier == TierKind::kMemory) ++from_memory;
    });
  }
  EXPECT_TRUE(compiler.wait_until_running(1));
  EXPECT_TRUE(eventually([&] { return cache->stats().requests == kThreads; }));
  compiler.open_gate();
  for (auto& t : threads) t.join();
  const CacheStats stats = cache->stats();
  EXPECT_EQ(stats.requests, std::uint64_t{kThreads});
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.memory_hits, std::uint64_t(from_memory.load()));
  EXPECT_EQ(stats.memory_hits, std::uint64_t{kThreads - 1});
  EXPECT_EQ(answered(stats), stats.requests);
  // Each hit served the binary and saved the compile it did not make.
  EXPECT_EQ(stats.bytes_served, (kThreads - 1) * binary_size.load());
  EXPECT_GT(stats.compile_micros_saved, 0u);
}

// A compile that fails fails every thread waiting for it, and each is
// answered without compiling (a failure hit), not left uncounted.
TEST_F(CacheTest, ThreadsGivenAnotherThreadsCompileErrorAreFailureHits) {
  constexpr int kThreads = 4;
  auto cache = open();
  compiler.close_gate();
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      auto kernel = cache->get_or_compile(request("#error nope"), compiler);
      if (kernel.status().code() == StatusCode::kCompileError) ++failed;
    });
  }
  EXPECT_TRUE(compiler.wait_until_running(1));
  EXPECT_TRUE(eventually([&] { return cache->stats().requests == kThreads; }));
  compiler.open_gate();
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, kThreads);
  const CacheStats stats = cache->stats();
  EXPECT_EQ(stats.compile_failures, 1u);
  EXPECT_EQ(stats.failure_hits, std::uint64_t{kThreads - 1});
  EXPECT_EQ(answered(stats), stats.requests);
}

// A request the compiler refuses whole (a target it does not take) is
// none the cache answered, and is not counted.
TEST_F(CacheTest, ARequestRefusedBeforeALookupIsNotCounted) {
  auto cache = open();
  KernelRequest refused = request();
  refused.target = Target{"unsupported", "", 0};
  EXPECT_FALSE(cache->get_or_compile(refused, compiler).is_ok());
  EXPECT_EQ(cache->stats().requests, 0u);
  ASSERT_TRUE(cache->get_or_compile(request(), compiler).is_ok());
  EXPECT_EQ(answered(cache->stats()), cache->stats().requests);
}

// All four compiles are held at the gate together: they can only all be
// running if none waits for another.
TEST_F(CacheTest, DifferentKeysCompileInParallel) {
  auto cache = open();
  compiler.close_gate();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(
        [&, i] { (void)cache->get_or_compile(request(std::to_string(i)), compiler); });
  }
  EXPECT_TRUE(compiler.wait_until_running(4)) << "compiles of different keys were serialized";
  compiler.open_gate();
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiler.compiles, 4);
  EXPECT_FALSE(compiler.gate_expired);
}

// Two caches on one directory behave like two processes: their locks are
// open-file-description locks, which conflict within a process too. The
// leader's compile is held until the second cache has found the key's lock
// taken, so the second one really waits.
TEST_F(CacheTest, SecondCacheWaitsForTheFirstAndReadsItsEntry) {
  auto first = open();
  auto second = open();
  FakeCompiler other_compiler;  // counts the second "process"'s compiles alone
  compiler.close_gate();
  std::thread leader([&] { EXPECT_TRUE(first->get_or_compile(request(), compiler).is_ok()); });
  EXPECT_TRUE(compiler.wait_until_running(1));  // the leader holds the key's lock
  std::optional<Result<CachedKernel>> waited;
  std::thread follower([&] { waited = second->get_or_compile(request(), other_compiler); });
  EXPECT_TRUE(env.wait_until_busy_key_locks(1, FakeCompiler::kWaitLimit));
  compiler.open_gate();
  leader.join();
  follower.join();
  ASSERT_TRUE(waited.has_value() && waited->is_ok());
  EXPECT_EQ((*waited)->tier, TierKind::kUser);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(other_compiler.compiles, 0);
  EXPECT_FALSE(compiler.gate_expired);
}

// The leader's compile is held until the impatient cache has given up and
// compiled the kernel itself: the lock timeout, not the leader, ends the
// wait. The upper bound only tells "gave up after its timeout" from "waited
// for the leader's gate" (a minute).
TEST_F(CacheTest, LockTimeoutBoundsTheWait) {
  auto first = open();
  CacheOptions impatient;
  impatient.lock_timeout = std::chrono::milliseconds(100);
  auto second = open(impatient);
  FakeCompiler other_compiler;
  compiler.close_gate();
  std::thread leader([&] { EXPECT_TRUE(first->get_or_compile(request(), compiler).is_ok()); });
  EXPECT_TRUE(compiler.wait_until_running(1));  // the leader holds the key's lock
  const auto start = std::chrono::steady_clock::now();
  auto own = second->get_or_compile(request(), other_compiler);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(compiler.finished(), 0);  // the leader was still compiling
  compiler.open_gate();
  leader.join();
  ASSERT_TRUE(own.is_ok());
  EXPECT_EQ(own->tier, TierKind::kCompiled);
  EXPECT_EQ(other_compiler.compiles, 1);
  EXPECT_GE(waited, impatient.lock_timeout);
  EXPECT_LT(waited, std::chrono::seconds(20));
  EXPECT_GE(env.busy_key_locks(), 1);
  EXPECT_EQ(second->stats().lock_timeouts, 1u);
  EXPECT_EQ(log_lines_containing("kcache: Warning [Lock] Waited 0.1"), 1);
  EXPECT_FALSE(compiler.gate_expired);
}

// The leader holds the lock of key a (its compile is held at the gate)
// while the second cache fetches key b: b never meets a taken lock and is
// compiled before a's compile returns.
TEST_F(CacheTest, DifferentKeysDoNotWaitAcrossCaches) {
  auto first = open();
  auto second = open();
  FakeCompiler other_compiler;
  compiler.close_gate();
  std::thread leader([&] { EXPECT_TRUE(first->get_or_compile(request("a"), compiler).is_ok()); });
  EXPECT_TRUE(compiler.wait_until_running(1));  // the leader holds a's lock
  auto other = second->get_or_compile(request("b"), other_compiler);
  EXPECT_EQ(compiler.finished(), 0);  // a is still being compiled
  EXPECT_EQ(env.busy_key_locks(), 0);
  compiler.open_gate();
  leader.join();
  ASSERT_TRUE(other.is_ok());
  EXPECT_EQ(other->tier, TierKind::kCompiled);
  EXPECT_EQ(other_compiler.compiles, 1);
  EXPECT_FALSE(compiler.gate_expired);
}

// The lock file's content is never read: garbage in it changes nothing. A
// folder in its place is moved to quarantine, once, and locking goes on.
TEST_F(CacheTest, BadLockFilesAreHarmlessOrQuarantined) {
  const std::string user = dir_path() + "/cache/" KCACHE_VERSION_STRING;
  testing::write_file(user + "/gfx906_60.locks", std::string(3000, '\x5a'));
  EXPECT_EQ(open()->get_or_compile(request("a"), compiler)->tier, TierKind::kCompiled);
  EXPECT_EQ(log_lines_containing("[Lock]") + log_lines_containing("[Integrity]"), 0);
  std::filesystem::remove(user + "/gfx906_60.locks");
  std::filesystem::create_directories(user + "/gfx906_60.locks/inside");
  auto cache = open();
  auto kernel = cache->get_or_compile(request("b"), compiler);
  ASSERT_TRUE(kernel.is_ok());
  EXPECT_EQ(kernel->tier, TierKind::kCompiled);
  EXPECT_EQ(cache->stats().corrupt_entries, 1u);
  EXPECT_EQ(log_lines_containing("not a lock file"), 1);
  EXPECT_TRUE(std::filesystem::is_regular_file(user + "/gfx906_60.locks"));
  EXPECT_EQ(open()->get_or_compile(request("b"), compiler)->tier, TierKind::kUser);
}

TEST_F(CacheTest, CompilerExceptionsDoNotEscape) {
  auto cache = open();
  auto r = request();
  r.warmup = [](const BuiltProgram&) -> Status { throw std::runtime_error("boom"); };
  class ThrowingCompiler : public Compiler {
   public:
    const CompilerIdentity& identity() const override { return id; }
    Result<Target> resolve_target(const Target& t) const override { return t; }
    Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
      throw std::runtime_error("compiler bug");
    }
    CompilerIdentity id{"throw", "t", "1"};
  } throwing;
  auto result = cache->get_or_compile(r, throwing);
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_NE(result.status().message().find("compiler bug"), std::string::npos);
}

TEST_F(CacheTest, KeyForMatchesWhatIsStored) {
  auto cache = open();
  auto keyed = AdvancedCache(*cache).key_for(request(), compiler);
  ASSERT_TRUE(keyed.is_ok());
  auto kernel = cache->get_or_compile(request(), compiler);
  EXPECT_EQ(keyed->first, kernel->key);
  EXPECT_EQ(keyed->second.digest(), kernel->key);
}

// prepare + get_or_compile(prepared) is get_or_compile in two halves: the
// same key, the same tiers; keep_in_memory = false leaves a disk hit out of
// the memory tier (the CUDA loader keeps modules instead).
TEST_F(CacheTest, PreparedRequestsAreLookedUpLikeRequests) {
  const KernelRequest req = request();
  {
    auto cache = open();
    auto prepared = AdvancedCache(*cache).prepare(req, req.target, compiler);
    ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
    EXPECT_EQ(prepared->key(), AdvancedCache(*cache).key_for(req, compiler)->first);
    EXPECT_EQ(prepared->target(), req.target);
    auto compiled = AdvancedCache(*cache).get_or_compile(*prepared, compiler);
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
    EXPECT_EQ(compiled->tier, TierKind::kCompiled);
    EXPECT_EQ(compiled->key, prepared->key());
    EXPECT_EQ(AdvancedCache(*cache).get_or_compile(*prepared, compiler)->tier, TierKind::kMemory);
  }
  auto cache = open();
  auto prepared = AdvancedCache(*cache).prepare(req, req.target, compiler);
  ASSERT_TRUE(prepared.is_ok());
  for (int i = 0; i < 2; ++i) {
    auto hit = AdvancedCache(*cache).get_or_compile(*prepared, compiler, {.keep_in_memory = false});
    ASSERT_TRUE(hit.is_ok());
    EXPECT_EQ(hit->tier, TierKind::kUser) << "lookup " << i;
  }
  EXPECT_EQ(AdvancedCache(*cache).get_or_compile(*prepared, compiler)->tier, TierKind::kUser);
  EXPECT_EQ(AdvancedCache(*cache).get_or_compile(*prepared, compiler)->tier, TierKind::kMemory);
  EXPECT_EQ(cache->stats().requests, 4u);
  EXPECT_EQ(compiler.compiles, 1);

  EXPECT_EQ(
      AdvancedCache(*cache).prepare(req, Target{"unsupported", "", 0}, compiler).status().code(),
      StatusCode::kInvalidArgument);
  // A prepared request belongs to its cache and compiler.
  FakeCompiler other;
  EXPECT_EQ(AdvancedCache(*cache).get_or_compile(*prepared, other).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(AdvancedCache(*open()).get_or_compile(*prepared, compiler).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(other.compiles, 0);
}

// keep_in_memory = false holds for a compile too: the binary goes to the
// user tier only, where the next request finds it.
TEST_F(CacheTest, CompiledBinaryStaysOutOfMemoryWhenAskedTo) {
  const KernelRequest req = request();
  auto cache = open();
  auto prepared = AdvancedCache(*cache).prepare(req, req.target, compiler);
  ASSERT_TRUE(prepared.is_ok());
  EXPECT_EQ(
      AdvancedCache(*cache).get_or_compile(*prepared, compiler, {.keep_in_memory = false})->tier,
      TierKind::kCompiled);
  EXPECT_EQ(
      AdvancedCache(*cache).get_or_compile(*prepared, compiler, {.keep_in_memory = false})->tier,
      TierKind::kUser);
  EXPECT_EQ(compiler.compiles, 1);
}

// A header that exists but cannot be read cannot be keyed: prepare says so
// (an unkeyed request, no error), and get_or_compile, either way, compiles
// without the cache, with one warning.
TEST_F(CacheTest, UnreadableHeaderCompilesWithoutTheCache) {
  std::filesystem::create_directories(dir / "inc");
  std::ofstream(dir / "inc/common.h") << "#define X 1\n";
  env.inject(testing::FaultOp::kRead, "common.h", EACCES);
  KernelRequest req = request("#include \"common.h\"\nkernel void k() {}");
  req.include_dirs = {dir / "inc"};
  auto cache = open();
  AdvancedCache expert(*cache);
  auto prepared = expert.prepare(req, req.target, compiler);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  EXPECT_FALSE(prepared->keyed());
  EXPECT_EQ(prepared->key(), CacheKey{});
  for (int i = 0; i < 2; ++i) {
    auto compiled =
        i == 0 ? cache->get_or_compile(req, compiler) : expert.get_or_compile(*prepared, compiler);
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
    EXPECT_EQ(compiled->tier, TierKind::kCompiled);
  }
  EXPECT_EQ(compiler.compiles, 2);
  EXPECT_EQ(log_lines_containing("compiling without the cache"), 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "cache/" KCACHE_VERSION_STRING "/gfx906_60.ukdb"));
}

TEST_F(CacheTest, ZstdEntriesRoundTrip) {
  env.vars["KCACHE_COMPRESSION"] = "zstd";
  compiler.binary_size = 100000;
  {
    auto cache = open();
    ASSERT_TRUE(cache->get_or_compile(request(), compiler).is_ok());
    auto listed = CacheAdmin(*cache).list();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_LT((*listed)[0].stored_bytes, (*listed)[0].bytes);
  }
  auto kernel = open()->get_or_compile(request(), compiler);
  EXPECT_EQ(kernel->tier, TierKind::kUser);
  EXPECT_EQ(kernel->binary().size(), 100000u);
}

// A compiler whose binaries say whether the request had a warmup (as the
// OpenCL backend's metadata "warmed" does), counting its compiles; with
// `picky`, it passes over a binary stored without one for a request that
// has one (Compiler::stored_binary_serves, as the OpenCL backend does).
class WarmingCompiler : public Compiler {
 public:
  explicit WarmingCompiler(bool picky = true) : picky_(picky) {}
  const CompilerIdentity& identity() const override { return id; }
  Result<Target> resolve_target(const Target& t) const override { return t; }
  Result<CompileOutput> compile(const KernelRequest& request, const Target&) override {
    ++compiles;
    CompileOutput out;
    out.binary = {1, 2, 3};
    out.metadata = {{kWarmedField, request.warmup ? "yes" : "no"}};
    return out;
  }
  bool stored_binary_serves(
      const KernelRequest& request,
      const std::vector<std::pair<std::string, std::string>>& metadata) const override {
    ++asked;
    if (!picky_ || !request.warmup) return true;
    const std::pair<std::string, std::string> unwarmed{kWarmedField, "no"};
    return std::find(metadata.begin(), metadata.end(), unwarmed) == metadata.end();
  }
  CompilerIdentity id{"warm", "w", "1"};
  int compiles = 0;
  mutable int asked = 0;

 private:
  bool picky_;
};

// The rule is the compiler's: one that does not pass over its binaries
// gets the unwarmed one served to a request with a warmup, whatever the
// metadata says.
TEST_F(CacheTest, AStoredBinaryServesUnlessItsCompilerSaysOtherwise) {
  WarmingCompiler plain(/*picky=*/false);
  ASSERT_TRUE(open()->get_or_compile(request(), plain).is_ok());
  auto warm_request = request();
  warm_request.warmup = [](const BuiltProgram&) { return Status::ok(); };
  auto served = open()->get_or_compile(warm_request, plain);
  ASSERT_TRUE(served.is_ok());
  EXPECT_EQ(served->tier, TierKind::kUser);
  EXPECT_EQ(served->metadata(kWarmedField), "no");
  EXPECT_EQ(plain.compiles, 1);
  EXPECT_GE(plain.asked, 1);
}

// An entry stored without a warmup (metadata warmed=no) does not satisfy a
// request that brings one: it is rebuilt warmed, once.
TEST_F(CacheTest, UnwarmedEntryIsRebuiltForAWarmupRequest) {
  WarmingCompiler warming;
  EXPECT_EQ(open()->get_or_compile(request(), warming)->metadata(kWarmedField), "no");
  auto warm_request = request();
  warm_request.warmup = [](const BuiltProgram&) { return Status::ok(); };
  auto rebuilt = open()->get_or_compile(warm_request, warming);
  EXPECT_EQ(rebuilt->tier, TierKind::kCompiled);
  EXPECT_EQ(rebuilt->metadata(kWarmedField), "yes");
  auto reused = open()->get_or_compile(warm_request, warming);
  EXPECT_EQ(reused->tier, TierKind::kUser);
  EXPECT_EQ(reused->metadata(kWarmedField), "yes");
  EXPECT_EQ(warming.compiles, 2);
  // A request without a warmup takes the warmed binary happily.
  EXPECT_EQ(open()->get_or_compile(request(), warming)->tier, TierKind::kUser);
}

// A package's entry stored without a warmup (kcache pack runs none) is
// served to a request that brings one: the system tier cannot be rebuilt
// warmed, and a binary beats a compile.
TEST_F(CacheTest, UnwarmedPackageEntryIsServedToAWarmupRequest) {
  WarmingCompiler unwarmed;
  {
    auto cache = open();
    ASSERT_TRUE(cache->get_or_compile(request(), unwarmed).is_ok());
    std::filesystem::create_directories(dir / "system");
    ASSERT_TRUE(CacheAdmin(*cache).export_db("gfx906_60", dir / "system/gfx906_60.kdb").is_ok());
    ASSERT_TRUE(CacheAdmin(*cache).clear().is_ok());
  }
  auto warm_request = request();
  warm_request.warmup = [](const BuiltProgram&) { return Status::ok(); };
  auto served = open()->get_or_compile(warm_request, unwarmed);
  ASSERT_TRUE(served.is_ok());
  EXPECT_EQ(served->tier, TierKind::kSystem);
  EXPECT_EQ(served->metadata(kWarmedField), "no");
  EXPECT_EQ(unwarmed.compiles, 1);
  EXPECT_EQ(unwarmed.asked, 0) << "a package's binary is not the compiler's to pass over";
}

TEST_F(CacheTest, ClearEmptiesUserAndMemory) {
  auto cache = open();
  ASSERT_TRUE(cache->get_or_compile(request(), compiler).is_ok());
  EXPECT_EQ(*CacheAdmin(*cache).clear(), 1u);
  EXPECT_EQ(cache->get_or_compile(request(), compiler)->tier, TierKind::kCompiled);
}

}  // namespace
}  // namespace kcache
