// Many processes on one cache: single flight across processes, no lock
// errors, and crash safety under kill -9 at any moment.
#include <kcache/cache.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
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

CacheOptions options_for(const TempFolder& dir) {
  CacheOptions options;
  options.cache_dir = dir / "cache";
  options.system_db_path = dir / "system";
  options.log_level = LogLevel::kQuiet;
  options.read_environment = false;
  return options;
}

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
  auto report = (*cache)->verify(false);
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->entries_ok, static_cast<std::uint64_t>(kKernels));
  EXPECT_TRUE(report->problems.empty());
  EXPECT_EQ((*cache)->list()->size(), static_cast<std::size_t>(kKernels));
}

// Dies (SIGKILL, like a power cut for everything above the disk) at a
// chosen append to a log: before it, halfway through the entry, or after
// the entry and before its hint record.
class KillingEnv final : public EnvWrapper {
 public:
  KillingEnv(int kill_at_write, int how)
      : EnvWrapper(Env::posix()), kill_at_(kill_at_write), how_(how) {}
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    auto file = EnvWrapper::open_file(path, mode, create_mode);
    if (!file || !path.ends_with(".ukdb")) return file;
    return std::unique_ptr<File>(std::make_unique<KillingFile>(std::move(*file), *this));
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
      if (data.size() < userlog::kAlignment || ++env_.writes_ != env_.kill_at_) {
        return file_->write_at(offset, data);  // padding is not counted
      }
      if (env_.how_ == 0) ::raise(SIGKILL);
      if (env_.how_ == 1) {  // a torn entry
        (void)file_->write_at(offset, data.first(data.size() / 2));
        ::raise(SIGKILL);
      }
      Status s = file_->write_at(offset, data);
      (void)file_->sync();
      ::raise(SIGKILL);
      return s;
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override { return file_->sync(); }

   private:
    std::unique_ptr<File> file_;
    KillingEnv& env_;
  };

  int kill_at_;
  int how_;
  int writes_ = 0;
};

TEST(CacheMultiprocessTest, KillNineAtAnyMomentLosesNothingCommittedAndServesNothingWrong) {
  TempFolder dir;
  constexpr int kIterations = 200;
  constexpr int kWriters = 3;
  constexpr int kKernels = 40;
  std::mt19937 random(12345);
  std::set<int> committed;  // kernels some writer reported stored, over all iterations
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    std::vector<pid_t> children;
    std::vector<int> pipes;
    for (int w = 0; w < kWriters; ++w) {
      int fds[2];
      ASSERT_EQ(::pipe(fds), 0);
      const unsigned seed = random();
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(fds[0]);
        std::mt19937 child_random(seed);
        // One writer in three kills itself inside a write; the parent kills
        // the rest at a random moment (compiling, writing or committing).
        KillingEnv env(static_cast<int>(child_random() % 4) + 1,
                       w == 0 ? static_cast<int>(child_random() % 3) : -1);
        auto cache = open_cache_with_env(options_for(dir), env);
        FakeCompiler compiler;
        compiler.binary_size = kCrashBinarySize;
        for (int n = 0; n < kKernels; ++n) {
          int i = static_cast<int>(child_random() % kKernels);
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
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 30000));
    for (pid_t pid : children) ::kill(pid, SIGKILL);
    for (std::size_t w = 0; w < children.size(); ++w) {
      for (std::string line : [&] {
             std::vector<std::string> lines;
             std::string text = receive_all(pipes[w]);
             for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
                  start = end + 1) {
               lines.push_back(text.substr(start, end - start));
             }
             return lines;
           }()) {
        committed.insert(std::stoi(line));
      }
      ::close(pipes[w]);
      ::waitpid(children[w], nullptr, 0);
    }

    // Every kernel a writer got back from the cache (compiled and stored, or
    // read) is there, with the right bytes; nothing reads back wrong.
    auto cache = Cache::open(options_for(dir));
    ASSERT_TRUE(cache.is_ok());
    NoCompiler must_hit;
    for (int i : committed) {
      auto kernel = (*cache)->get_or_compile(request_for(i), must_hit);
      ASSERT_TRUE(kernel.is_ok()) << "iteration " << iteration << ": kernel " << i
                                  << " was committed but is gone: " << kernel.status().to_string();
      ASSERT_TRUE(std::string(kernel->binary().begin(), kernel->binary().end()) ==
                  expected_binary(i, kCrashBinarySize))
          << "kernel " << i << " reads back wrong";
    }
    auto report = (*cache)->verify(false);
    ASSERT_TRUE(report.is_ok());
    ASSERT_EQ(report->entries_ok, report->entries_checked) << "iteration " << iteration;
    for (const auto& problem : report->problems) {
      // A writer killed inside an append leaves part of an entry at the end
      // of the log, or a whole entry without its hint record: the only
      // problems a kill may leave (the next writer mends both).
      const bool torn = problem.problem.starts_with("an interrupted write left");
      const bool unhinted = problem.problem.ends_with("is not in the hint file");
      ASSERT_TRUE(torn || unhinted) << problem.path << ": " << problem.problem;
    }
    EXPECT_EQ((*cache)->stats().corrupt_entries, 0u);
  }
  EXPECT_GT(committed.size(), 0u);
  auto cache = Cache::open(options_for(dir));
  auto repaired = (*cache)->verify(true);
  ASSERT_TRUE(repaired.is_ok());
  auto clean = (*cache)->verify(false);
  EXPECT_TRUE(clean->problems.empty());
}

}  // namespace
}  // namespace kcache
