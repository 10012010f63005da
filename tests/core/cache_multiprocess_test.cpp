// Many processes on one cache: single flight across processes, no lock
// errors, and crash safety under kill -9 at any moment.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/cache_internal.h"
#include "fakes/fake_compiler.h"
#include "fakes/temp_folder.h"
#include "store/user/user_log.h"

namespace kcache {
namespace {

using testing::FakeCompiler;
using testing::TempFolder;

KernelRequest request_for(int i) {
  KernelRequest request;
  request.source = "kernel void k" + std::to_string(i) + "() {}";
  request.target = Target{"fake_arch", "", 4};
  return request;
}

// What FakeCompiler makes of request i: the bytes a hit must return.
std::string expected_binary(int i, std::size_t padded_to = 0) {
  const KernelRequest request = request_for(i);
  std::string bytes =
      "BIN[" + request.target.id() + "|" + request.options + "|" + request.source + "]";
  if (bytes.size() < padded_to) bytes.resize(padded_to, '\xAB');
  return bytes;
}

// Large binaries make writes slow enough (about a millisecond with the
// fsync) that random kills land inside them often.
constexpr std::size_t kCrashBinarySize = 512 * 1024;

// A cache in `folder` (cache/ and system/ inside it).
CacheOptions options_in(const std::string& folder) {
  CacheOptions options;
  options.cache_dir = folder + "/cache";
  options.system_db_path = folder + "/system";
  options.log_level = LogLevel::kQuiet;
  options.read_environment = false;
  return options;
}

CacheOptions options_for(const TempFolder& dir) { return options_in(dir.path()); }

// A compiler that must not run: a request answered through it is a miss.
class NoCompiler final : public Compiler {
 public:
  const CompilerIdentity& identity() const override { return fake_.identity(); }
  Result<Target> resolve_target(const Target& t) const override { return fake_.resolve_target(t); }
  Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
    ++compiles;
    return Status::internal("compile called on a hit");
  }
  int compiles = 0;

 private:
  FakeCompiler fake_;
};

// Writes all of `text` to `fd` (a pipe to the parent).
void send(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::string receive_all(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

TEST(CacheMultiprocessTest, SixtyFourProcessesCompileEachKernelOnce) {
  TempFolder dir;
  constexpr int kProcesses = 64;
  constexpr int kKernels = 16;
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int p = 0; p < kProcesses; ++p) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      int compiles = 0, wrong = 0, errors = 0;
      {
        auto cache = Cache::open(options_for(dir));
        FakeCompiler compiler;
        compiler.delay = std::chrono::milliseconds(20);
        std::vector<int> order(kKernels);
        for (int i = 0; i < kKernels; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937(p));
        for (int i : order) {
          auto kernel = (*cache)->get_or_compile(request_for(i), compiler);
          if (!kernel) {
            ++errors;
            send(fds[1], "error " + kernel.status().to_string() + "\n");
          } else if (std::string(kernel->binary().begin(), kernel->binary().end()) !=
                     expected_binary(i)) {
            ++wrong;
          }
        }
        compiles = compiler.compiles;
      }
      send(fds[1], "compiles " + std::to_string(compiles) + " wrong " + std::to_string(wrong) +
                       " errors " + std::to_string(errors) + "\n");
      ::_exit(0);
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  int compiles = 0;
  for (int p = 0; p < kProcesses; ++p) {
    std::string report = receive_all(pipes[p]);
    ::close(pipes[p]);
    int status = 0;
    ::waitpid(children[p], &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << p;
    int c = 0, wrong = -1, errors = -1;
    ASSERT_EQ(std::sscanf(report.c_str() + report.rfind("compiles"),
                          "compiles %d wrong %d errors %d", &c, &wrong, &errors),
              3)
        << report;
    EXPECT_EQ(wrong, 0) << "child " << p;
    EXPECT_EQ(errors, 0) << "child " << p << ": " << report;
    compiles += c;
  }
  // One compile per kernel across all 64 processes.
  EXPECT_EQ(compiles, kKernels);
  auto cache = Cache::open(options_for(dir));
  // Every process's counts reached the folder's: the 64 processes opened
  // the cache before its folder (and its stats file) existed.
  auto counted = CacheAdmin(**cache).folder_stats();
  ASSERT_TRUE(counted.is_ok()) << counted.status().to_string();
  EXPECT_TRUE(counted->counted);
  EXPECT_EQ(counted->counts.requests, std::uint64_t{kProcesses} * kKernels);
  EXPECT_EQ(counted->counts.compiles, std::uint64_t{kKernels});
  EXPECT_EQ(counted->counts.user_hits + counted->counts.memory_hits,
            std::uint64_t{kProcesses - 1} * kKernels);
  EXPECT_GT(counted->counts.lock_waits, 0u);
  EXPECT_EQ(counted->entries, std::uint64_t{kKernels});
  auto report = CacheAdmin(**cache).verify();
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->entries_ok, static_cast<std::uint64_t>(kKernels));
  EXPECT_TRUE(report->problems.empty());
  EXPECT_EQ(CacheAdmin(**cache).list()->size(), static_cast<std::size_t>(kKernels));
}

// Where a writer is, for the parent to read after it died: in shared
// memory (MAP_SHARED), so the last store before a SIGKILL is what it sees.
enum AppendPhase : int {
  kOutsideAppend = 0,  // compiling, reading, waiting for a lock, or between appends
  kWritingEntry = 1,   // the entry's bytes are being written to the log
  kEntryUnhinted = 2,  // the entry is in the log, its hint record not yet
};
struct WriterProgress {
  std::atomic<int> phase{kOutsideAppend};
  std::atomic<int> appends_begun{0};
  std::atomic<bool> killed_itself{false};
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "shared between processes");

// Reports each append's progress to `progress`, and dies (SIGKILL, like a
// power cut for everything above the disk) at a chosen append to a log
// when `how` >= 0: before it, halfway through the entry, or after the entry
// and before its hint record.
class KillingEnv final : public EnvWrapper {
 public:
  KillingEnv(WriterProgress& progress, int kill_at_write, int how)
      : EnvWrapper(Env::posix()), progress_(progress), kill_at_(kill_at_write), how_(how) {}
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    auto file = EnvWrapper::open_file(path, mode, create_mode);
    if (!file) return file;
    if (path.ends_with(".ukdb")) {
      return std::unique_ptr<File>(std::make_unique<KillingFile>(std::move(*file), *this));
    }
    if (path.ends_with(".ukdx")) {
      return std::unique_ptr<File>(std::make_unique<HintFile>(std::move(*file), *this));
    }
    return file;
  }

 private:
  class KillingFile final : public File {
   public:
    KillingFile(std::unique_ptr<File> file, KillingEnv& env) : file_(std::move(file)), env_(env) {}
    Result<std::uint64_t> size() const override { return file_->size(); }
    FileId id() const override { return file_->id(); }
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      return file_->read_at(offset, out);
    }
    Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
      if (data.size() < userlog::kAlignment) return file_->write_at(offset, data);  // padding
      WriterProgress& progress = env_.progress_;
      ++progress.appends_begun;
      if (++env_.writes_ == env_.kill_at_ && env_.how_ >= 0) {
        progress.killed_itself = true;
        if (env_.how_ == 0) ::raise(SIGKILL);
        progress.phase = kWritingEntry;
        if (env_.how_ == 1) {  // a torn entry
          (void)file_->write_at(offset, data.first(data.size() / 2));
          ::raise(SIGKILL);
        }
        (void)file_->write_at(offset, data);
        (void)file_->sync();
        progress.phase = kEntryUnhinted;
        ::raise(SIGKILL);
      }
      progress.phase = kWritingEntry;
      Status s = file_->write_at(offset, data);
      progress.phase = kEntryUnhinted;
      return s;
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override { return file_->sync(); }

   private:
    std::unique_ptr<File> file_;
    KillingEnv& env_;
  };

  // The hint file: once a hint record is written, the append is over.
  class HintFile final : public File {
   public:
    HintFile(std::unique_ptr<File> file, KillingEnv& env) : file_(std::move(file)), env_(env) {}
    Result<std::uint64_t> size() const override { return file_->size(); }
    FileId id() const override { return file_->id(); }
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      return file_->read_at(offset, out);
    }
    Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
      Status s = file_->write_at(offset, data);
      env_.progress_.phase = kOutsideAppend;
      return s;
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override { return file_->sync(); }

   private:
    std::unique_ptr<File> file_;
    KillingEnv& env_;
  };

  WriterProgress& progress_;
  int kill_at_;
  int how_;
  int writes_ = 0;
};

// Writers append fresh kernels in every round (ids never asked for before),
// so every round has appends for the kills to land in; the test counts the
// kills that did and fails when too few did. A log takes kRoundsPerLog
// rounds, then the next round starts a new one (so that re-reading every
// committed kernel stays cheap).
TEST(CacheMultiprocessTest, KillNineAtAnyMomentLosesNothingCommittedAndServesNothingWrong) {
  TempFolder dir;
  constexpr int kIterations = 200;
  constexpr int kRoundsPerLog = 10;
  constexpr int kWriters = 3;
  constexpr int kKernels = 12;  // fresh ones per round; every writer asks for all of them
  void* shared = ::mmap(nullptr, sizeof(WriterProgress) * kWriters, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* progress = static_cast<WriterProgress*>(shared);
  std::mt19937 random(12345);
  std::set<int> committed;  // kernels some writer got back from the cache, in this log
  int killed_by_parent = 0;
  int killed_by_parent_in_append = 0;  // between an entry's first byte and its hint record
  int killed_by_parent_in_entry = 0;   // while the entry's bytes were being written
  int killed_itself = 0;               // at its chosen append (writer 0)
  int finished = 0;                    // done before the kill
  auto check_log_mends = [](const std::string& folder) {
    auto cache = Cache::open(options_in(folder));
    ASSERT_TRUE(cache.is_ok());
    auto repaired = CacheAdmin(**cache).verify({.repair = true});
    ASSERT_TRUE(repaired.is_ok());
    auto clean = CacheAdmin(**cache).verify();
    ASSERT_TRUE(clean.is_ok());
    EXPECT_TRUE(clean->problems.empty()) << folder;
  };
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const std::string folder = dir / ("log" + std::to_string(iteration / kRoundsPerLog));
    if (iteration > 0 && iteration % kRoundsPerLog == 0) {
      const std::string previous = dir / ("log" + std::to_string(iteration / kRoundsPerLog - 1));
      check_log_mends(previous);
      std::filesystem::remove_all(previous);
      committed.clear();
    }
    std::vector<pid_t> children;
    std::vector<int> pipes;
    for (int w = 0; w < kWriters; ++w) {
      new (&progress[w]) WriterProgress();
      int fds[2];
      ASSERT_EQ(::pipe(fds), 0);
      const unsigned seed = random();
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(fds[0]);
        std::mt19937 child_random(seed);
        // One writer in three kills itself inside an append; the parent kills
        // the rest at a random moment (compiling, writing or committing).
        const int kill_at = static_cast<int>(child_random() % 4) + 1;
        const int how = w == 0 ? static_cast<int>(child_random() % 3) : -1;
        KillingEnv env(progress[w], kill_at, how);
        auto cache = open_cache_with_env(options_in(folder), env);
        if (!cache) {
          send(fds[1], "cannot open the cache: " + cache.status().to_string() + "\n");
          ::_exit(3);
        }
        FakeCompiler compiler;
        compiler.binary_size = kCrashBinarySize;
        std::vector<int> order(kKernels);
        for (int i = 0; i < kKernels; ++i) order[i] = iteration * kKernels + i;
        std::shuffle(order.begin(), order.end(), child_random);
        for (int i : order) {
          compiler.delay = std::chrono::milliseconds(child_random() % 3);
          auto kernel = (*cache)->get_or_compile(request_for(i), compiler);
          if (kernel && kernel->tier != TierKind::kMemory) send(fds[1], std::to_string(i) + "\n");
        }
        ::_exit(0);
      }
      ::close(fds[1]);
      children.push_back(pid);
      pipes.push_back(fds[0]);
    }
    // Kill once the writers have begun a random number of appends, plus a
    // random part of an append's time: the moment is random, but within the
    // writers' work, however fast this machine runs them. The deadline only
    // keeps a stuck round from hanging the test.
    const int target = static_cast<int>(random() % (kKernels / 2));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto begun = [&] {
      int n = 0;
      for (int w = 0; w < kWriters; ++w) n += progress[w].appends_begun;
      return n;
    };
    while (begun() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 2000));
    for (pid_t pid : children) ::kill(pid, SIGKILL);
    for (std::size_t w = 0; w < children.size(); ++w) {
      const std::string said = receive_all(pipes[w]);  // committed kernel ids, or an error
      ::close(pipes[w]);
      for (std::size_t start = 0, end; (end = said.find('\n', start)) != std::string::npos;
           start = end + 1) {
        const std::string line = said.substr(start, end - start);
        if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) {
          committed.insert(std::stoi(line));
        }
      }
      int status = 0;
      ASSERT_EQ(::waitpid(children[w], &status, 0), children[w]);
      if (progress[w].killed_itself) {
        ++killed_itself;
      } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
        ++killed_by_parent;
        const int phase = progress[w].phase;
        killed_by_parent_in_append += phase != kOutsideAppend ? 1 : 0;
        killed_by_parent_in_entry += phase == kWritingEntry ? 1 : 0;
      } else {
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "iteration " << iteration << ": writer " << w << " failed, status " << status << ": "
            << said;
        ++finished;
      }
    }

    // Every kernel a writer got back from the cache (compiled and stored, or
    // read) is there, with the right bytes; nothing reads back wrong.
    auto cache = Cache::open(options_in(folder));
    ASSERT_TRUE(cache.is_ok());
    NoCompiler must_hit;
    for (int i : committed) {
      auto kernel = (*cache)->get_or_compile(request_for(i), must_hit);
      ASSERT_TRUE(kernel.is_ok()) << "iteration " << iteration << ": kernel " << i
                                  << " was committed but is gone: " << kernel.status().to_string();
      // Compared in place: copying 512 KiB a kernel a round is most of
      // the test's time in a Debug build.
      const std::string expected = expected_binary(i, kCrashBinarySize);
      const auto binary = kernel->binary();
      ASSERT_TRUE(binary.size() == expected.size() &&
                  std::memcmp(binary.data(), expected.data(), expected.size()) == 0)
          << "kernel " << i << " reads back wrong";
    }
    auto report = CacheAdmin(**cache).verify();
    ASSERT_TRUE(report.is_ok());
    ASSERT_EQ(report->entries_ok, report->entries_checked) << "iteration " << iteration;
    for (const auto& problem : report->problems) {
      // A writer killed inside an append leaves part of an entry at the end
      // of the log, or a whole entry without its hint record; one killed
      // between making a new log and its hint leaves no hint file. Those
      // are the only problems a kill may leave (the next writer mends all).
      const bool torn = problem.problem.starts_with("an interrupted write left");
      const bool unhinted = problem.problem.ends_with("is not in the hint file");
      const bool no_hint_yet =
          problem.path.ends_with(".ukdx") && problem.problem.ends_with("No such file or directory");
      ASSERT_TRUE(torn || unhinted || no_hint_yet) << problem.path << ": " << problem.problem;
    }
    EXPECT_EQ((*cache)->stats().corrupt_entries, 0u);
  }
  check_log_mends(dir / ("log" + std::to_string((kIterations - 1) / kRoundsPerLog)));
  ::munmap(shared, sizeof(WriterProgress) * kWriters);

  std::printf(
      "[ kills    ] by the parent: %d, %d inside an append (%d while writing the entry); "
      "writers killed at their chosen append: %d; writers done before the kill: %d\n",
      killed_by_parent, killed_by_parent_in_append, killed_by_parent_in_entry, killed_itself,
      finished);
  ::testing::Test::RecordProperty("killed_by_parent_in_append", killed_by_parent_in_append);
  ::testing::Test::RecordProperty("killed_itself", killed_itself);
  // Kills that landed inside appends are what this test is about: with too
  // few of them it would prove nothing.
  EXPECT_GE(killed_by_parent_in_append, kIterations / 10)
      << "too few of the parent's kills landed inside an append";
  EXPECT_GE(killed_itself, kIterations / 10)
      << "too few writers reached the append they were to die in";
}

// Where an eviction pass is, for the parent (shared memory, as above).
struct EvictorProgress {
  std::atomic<int> compactions_begun{0};
  std::atomic<int> compactions_done{0};
  std::atomic<bool> compacting{false};
};

// Marks when a compaction's new log is being written (from the creation
// of its temporary file to its rename), and nothing else.
class CompactionWatchEnv final : public EnvWrapper {
 public:
  explicit CompactionWatchEnv(EvictorProgress& progress)
      : EnvWrapper(Env::posix()), progress_(progress) {}
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          mode_t mode) override {
    if (path.find(".ukdb.tmp.compact.") != std::string::npos) {
      ++progress_.compactions_begun;
      progress_.compacting = true;
    }
    return EnvWrapper::new_writable_file(path, mode);
  }
  Status rename(const std::string& from, const std::string& to) override {
    Status s = EnvWrapper::rename(from, to);
    if (from.find(".ukdb.tmp.compact.") != std::string::npos) {
      progress_.compacting = false;
      ++progress_.compactions_done;
    }
    return s;
  }

 private:
  EvictorProgress& progress_;
};

// Processes that compile past a small KCACHE_MAX_SIZE (so their puts start
// eviction passes) and prune, killed at random moments, many inside a
// compaction: whatever is left serves every kernel it has right, holds
// nothing wrong, and mends in one verify --repair.
TEST(CacheMultiprocessTest, KillNineDuringEvictionServesNothingWrongAndMendsInOnePass) {
  TempFolder dir;
  constexpr int kIterations = 60;
  constexpr int kRoundsPerLog = 10;
  constexpr int kWriters = 3;
  constexpr int kKernels = 16;
  constexpr std::size_t kBinarySize = 64 * 1024;
  void* shared = ::mmap(nullptr, sizeof(EvictorProgress) * kWriters, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* progress = static_cast<EvictorProgress*>(shared);
  std::mt19937 random(54321);
  int killed_in_compaction = 0;
  int compactions = 0;
  int served = 0;
  auto limited = [](const std::string& folder) {
    CacheOptions options = options_in(folder);
    options.max_size = 8 * kBinarySize;  // a pass every few puts
    return options;
  };
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const std::string folder = dir / ("log" + std::to_string(iteration / kRoundsPerLog));
    std::vector<pid_t> children;
    for (int w = 0; w < kWriters; ++w) {
      new (&progress[w]) EvictorProgress();
      const unsigned seed = random();
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        std::mt19937 child_random(seed);
        CompactionWatchEnv env(progress[w]);
        auto cache = open_cache_with_env(limited(folder), env);
        if (!cache) ::_exit(3);
        FakeCompiler compiler;
        compiler.binary_size = kBinarySize;
        for (int n = 0; n < kKernels; ++n) {
          const int i = iteration * kKernels + static_cast<int>(child_random() % kKernels);
          (void)(*cache)->get_or_compile(request_for(i), compiler);
          if (w == 0 && n % 4 == 3) {
            PruneOptions prune;
            prune.max_entries = 1 + child_random() % 4;
            (void)CacheAdmin(**cache).prune(prune);
          }
        }
        ::_exit(0);
      }
      children.push_back(pid);
    }
    // Kill once some compaction has begun (or a deadline passed), after a
    // random part of a compaction's time.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const int wanted = 1 + static_cast<int>(random() % 3);
    auto begun = [&] {
      int n = 0;
      for (int w = 0; w < kWriters; ++w) n += progress[w].compactions_begun;
      return n;
    };
    while (begun() < wanted && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
    for (pid_t pid : children) ::kill(pid, SIGKILL);
    for (std::size_t w = 0; w < children.size(); ++w) {
      int status = 0;
      ASSERT_EQ(::waitpid(children[w], &status, 0), children[w]);
      ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
          << "writer " << w << ": status " << status;
      if (WIFSIGNALED(status) && progress[w].compacting) ++killed_in_compaction;
      compactions += progress[w].compactions_done;
    }

    // Every kernel still there reads back right; a missing one is a miss.
    CacheOptions unlimited = options_in(folder);
    unlimited.max_size = 0;
    auto cache = Cache::open(unlimited);
    ASSERT_TRUE(cache.is_ok());
    for (int i = (iteration / kRoundsPerLog) * kRoundsPerLog * kKernels;
         i < (iteration + 1) * kKernels; ++i) {
      NoCompiler must_hit;
      auto kernel = (*cache)->get_or_compile(request_for(i), must_hit);
      if (!kernel) continue;  // evicted, or never compiled
      ++served;
      const std::string expected = expected_binary(i, kBinarySize);
      const auto binary = kernel->binary();
      ASSERT_TRUE(binary.size() == expected.size() &&
                  std::memcmp(binary.data(), expected.data(), expected.size()) == 0)
          << "iteration " << iteration << ": kernel " << i << " reads back wrong";
    }
    EXPECT_EQ((*cache)->stats().corrupt_entries, 0u) << "iteration " << iteration;
    // One repair mends all a kill left (a compaction's temporary file, a
    // torn append); then nothing is left to report.
    auto repaired = CacheAdmin(**cache).verify({.repair = true});
    ASSERT_TRUE(repaired.is_ok());
    auto clean = CacheAdmin(**cache).verify();
    ASSERT_TRUE(clean.is_ok());
    for (const auto& problem : clean->problems) {
      ADD_FAILURE() << "iteration " << iteration << ": " << problem.path << ": " << problem.problem;
    }
  }
  ::munmap(shared, sizeof(EvictorProgress) * kWriters);
  std::printf("[ kills    ] %d inside a compaction; %d compactions finished; %d kernels served\n",
              killed_in_compaction, compactions, served);
  ::testing::Test::RecordProperty("killed_in_compaction", killed_in_compaction);
  // Kills inside compactions are what this test is about.
  EXPECT_GE(killed_in_compaction, kIterations / 10) << "too few kills landed inside a compaction";
  EXPECT_GT(served, 0);
}

}  // namespace
}  // namespace kcache
