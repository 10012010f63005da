// "Process ready" with NVRTC (issue 10): how long a fresh process takes
// to open the cache, make the nvrtc compiler and get its first kernel
// from the user tier, with the compiler's facts record (no libnvrtc load)
// and without it (facts_dir "-": libnvrtc is loaded to learn its identity,
// as before 0.4.0). Each sample is a new process (fork + exec of this
// program); the parent times the whole process, the child the three steps
// from main(). No GPU is needed: NVRTC compiles to CUBIN on the CPU.
//
//   process_ready [--processes=30] [--smoke]
#include <sys/wait.h>
#include <unistd.h>

#include <kcache/cache.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_support.h"

namespace kcache::bench {
namespace {

KernelRequest request() {
  KernelRequest r;
  r.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  r.kernel_names = {"k"};
  r.target = Target{"sm_90", "", 0};
  return r;
}

CacheOptions options(const std::string& dir) {
  CacheOptions o;
  o.cache_dir = dir + "/cache";
  o.system_db_path = dir + "/none";
  o.read_environment = false;
  o.log_level = LogLevel::kError;
  return o;
}

// The child: the three steps, timed from here; prints microseconds.
int child(const std::string& dir, const std::string& facts) {
  const auto start = Clock::now();
  auto cache = Cache::open(options(dir));
  CompilerConfig config;
  config.backend = "nvrtc";
  config.facts_dir = facts;
  auto compiler = make_compiler(config);
  if (!cache || !compiler) return 3;
  const KernelRequest r = request();
  auto kernel = (*cache)->get_or_compile(r, **compiler);
  const double us = micros_since(start, Clock::now());
  if (!kernel || kernel->tier != TierKind::kUser) return 4;
  std::printf("%.1f\n", us);
  return 0;
}

struct Sample {
  double inside_us = 0;
  double whole_us = 0;
};

bool run_child(const char* self, const std::string& dir, const std::string& facts, Sample& out) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return false;
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::close(pipe_fds[0]);
    ::execl(self, self, "--child", dir.c_str(), facts.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char text[64] = {};
  const ssize_t n = ::read(pipe_fds[0], text, sizeof text - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  out.whole_us = micros_since(start, Clock::now());
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  out.inside_us = std::strtod(text, nullptr);
  return true;
}

int run(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], argv[3]);
  Args args(argc, argv);
  const int processes = args.flag("smoke") ? 2 : static_cast<int>(args.number("processes", 30));
  TempDir dir("kcache-process-ready-");
  {
    auto cache = Cache::open(options(dir.path()));
    CompilerConfig config;
    config.backend = "nvrtc";
    config.facts_dir = dir.path() + "/facts";
    auto compiler = make_compiler(config);
    if (!cache || !compiler) {
      std::printf("process_ready: skipped (no NVRTC: %s)\n",
                  compiler ? "" : compiler.status().message().c_str());
      return 125;
    }
    const KernelRequest r = request();
    if (!(*cache)->get_or_compile(r, **compiler)) return 1;
  }
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"with the facts record", dir.path() + "/facts"}, {"loading libnvrtc", "-"}};
  std::vector<std::vector<Sample>> samples(modes.size());
  for (int i = 0; i < processes; ++i) {
    for (std::size_t m = 0; m < modes.size(); ++m) {  // alternated, so both see the same host
      Sample s;
      if (!run_child(argv[0], dir.path(), modes[m].second, s)) {
        std::fprintf(stderr, "process_ready: a child failed\n");
        return 1;
      }
      samples[m].push_back(s);
    }
  }
  std::printf("process_ready: %d processes per mode, alternated\n\n", processes);
  std::printf(
      "| mode | open+compiler+first hit, median us | p90 us | whole process, median us |\n");
  std::printf("|---|---|---|---|\n");
  for (std::size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> inside, whole;
    for (const auto& s : samples[m]) {
      inside.push_back(s.inside_us);
      whole.push_back(s.whole_us);
    }
    const Summary a = summarize(inside);
    const Summary b = summarize(whole);
    std::printf("| %s | %.0f | %.0f | %.0f |\n", modes[m].first.c_str(), a.median, a.p90, b.median);
  }
  return 0;
}

}  // namespace
}  // namespace kcache::bench

int main(int argc, char** argv) { return kcache::bench::run(argc, argv); }
