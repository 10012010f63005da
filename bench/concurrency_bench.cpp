// concurrency_bench: P processes on one cache.
//
//   concurrency_bench [--kernels=M] [--compile-ms=T] [--processes=1,4,16,64] [--hits=N]
//
// Cold: P processes start together on an empty cache and each asks for the
// same M kernels (in its own order) from a fake compiler that takes T ms.
// Single flight across processes should make the compiles add up to M, and
// the wall time approach M*T / P (different kernels compile in parallel)
// rather than M*T (a global lock) or P*M*T (no coordination).
// Warm: P processes each make N lookups of those kernels (memory tier off,
// so every lookup reads the user tier): total hits per second.
#include <kcache/cache.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fakes/fake_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int kernels = 64;
  int compile_ms = 50;
  std::vector<int> processes = {1, 2, 4, 8, 16, 64};
  int hits = 2000;
};

kcache::KernelRequest request_for(int i) {
  kcache::KernelRequest request;
  request.source = "kernel void k" + std::to_string(i) + "(global float* x) { x[0] = 1; }";
  request.target = kcache::Target{"fake_arch", "", 4};
  return request;
}

kcache::CacheOptions options_for(const std::string& dir) {
  kcache::CacheOptions options;
  options.cache_dir = dir + "/cache";
  options.system_db_path = dir + "/system";
  options.memory_cache_size = 0;
  options.log_level = kcache::LogLevel::kError;
  options.read_environment = false;
  return options;
}

// Runs `body(p)` in `count` child processes that start together; returns
// the wall time and what each child wrote to its pipe.
template <class Body>
std::pair<double, std::vector<std::string>> in_processes(int count, Body body) {
  int go[2];
  if (::pipe(go) != 0) std::exit(1);
  std::vector<std::pair<pid_t, int>> children;
  for (int p = 0; p < count; ++p) {
    int out[2];
    if (::pipe(out) != 0) std::exit(1);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      ::close(out[0]);
      char byte;
      if (::read(go[0], &byte, 1) < 0) ::_exit(1);  // the start line
      std::string report = body(p);
      if (::write(out[1], report.data(), report.size()) < 0) ::_exit(1);
      ::_exit(0);
    }
    ::close(out[1]);
    children.emplace_back(pid, out[0]);
  }
  ::close(go[0]);
  auto start = Clock::now();
  ::close(go[1]);  // everyone starts
  std::vector<std::string> reports;
  for (auto [pid, fd] : children) {
    std::string text;
    char buffer[256];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, n);
    ::close(fd);
    ::waitpid(pid, nullptr, 0);
    reports.push_back(text);
  }
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return {ms, reports};
}

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) { return a.substr(std::strlen(name)); };
    if (a.starts_with("--kernels="))
      args.kernels = std::stoi(value("--kernels="));
    else if (a.starts_with("--compile-ms="))
      args.compile_ms = std::stoi(value("--compile-ms="));
    else if (a.starts_with("--hits="))
      args.hits = std::stoi(value("--hits="));
    else if (a.starts_with("--processes=")) {
      args.processes.clear();
      std::stringstream list(value("--processes="));
      for (std::string p; std::getline(list, p, ',');) args.processes.push_back(std::stoi(p));
    } else {
      std::fprintf(stderr,
                   "usage: concurrency_bench [--kernels=M] [--compile-ms=T] "
                   "[--processes=1,4,16,64] [--hits=N]\n");
      std::exit(2);
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  std::printf("### %d kernels, fake compile %d ms each, one cache\n\n", args.kernels,
              args.compile_ms);
  std::printf(
      "| processes | cold: compiles (must be %d) | cold wall ms | vs 1 process | "
      "warm hits/s (all processes) | vs 1 process |\n|---|---|---|---|---|---|\n",
      args.kernels);
  double single_cold = 0;
  double single_warm = 0;
  for (int count : args.processes) {
    char pattern[] = "/tmp/kcache-concurrency-XXXXXX";
    const std::string dir = ::mkdtemp(pattern);
    auto [cold_ms, cold_reports] = in_processes(count, [&](int p) {
      auto cache = kcache::Cache::open(options_for(dir));
      kcache::testing::FakeCompiler compiler;
      compiler.delay = std::chrono::milliseconds(args.compile_ms);
      std::vector<int> order(args.kernels);
      for (int i = 0; i < args.kernels; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      int errors = 0;
      for (int i : order) errors += (*cache)->get_or_compile(request_for(i), compiler) ? 0 : 1;
      return std::to_string(compiler.compiles.load()) + " " + std::to_string(errors);
    });
    int compiles = 0;
    int errors = 0;
    for (const auto& r : cold_reports) {
      int c = 0, e = 0;
      std::sscanf(r.c_str(), "%d %d", &c, &e);
      compiles += c;
      errors += e;
    }
    auto [warm_ms, warm_reports] = in_processes(count, [&](int p) {
      auto cache = kcache::Cache::open(options_for(dir));
      kcache::testing::FakeCompiler compiler;
      std::mt19937 random(p);
      int misses = 0;
      for (int n = 0; n < args.hits; ++n) {
        auto kernel = (*cache)->get_or_compile(request_for(random() % args.kernels), compiler);
        misses += (kernel && kernel->tier == kcache::TierKind::kUser) ? 0 : 1;
      }
      return std::to_string(misses);
    });
    int misses = 0;
    for (const auto& r : warm_reports) misses += std::stoi(r.empty() ? "1" : r);
    const double hits_per_s = count * args.hits / (warm_ms / 1000);
    if (count == 1) {
      single_cold = cold_ms;
      single_warm = hits_per_s;
    }
    std::printf("| %d | %d%s | %.0f | %.2fx | %.0f%s | %.2fx |\n", count, compiles,
                errors ? (" (" + std::to_string(errors) + " errors)").c_str() : "", cold_ms,
                single_cold > 0 ? cold_ms / single_cold : 0.0, hits_per_s,
                misses ? (" (" + std::to_string(misses) + " not user hits)").c_str() : "",
                single_warm > 0 ? hits_per_s / single_warm : 0.0);
    std::fflush(stdout);
    std::filesystem::remove_all(dir);
  }
  return 0;
}
