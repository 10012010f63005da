// Full API hits of kernels that include headers, against the same hit
// without includes (issue 10: "fast with real includes").
//
// Three requests, each warm in the user tier of one cache (memory tier
// off, so every hit reads the user tier as a new process would after its
// first request), asked in turn, shuffled each round:
//   plain      a ~4 KB kernel that includes nothing;
//   headers20  the same kernel plus 20 headers (~200 KB in all) through -I:
//              one includes five others, the source the rest;
//   fp16       the same kernel plus <cuda_fp16.h>, found in the NVRTC
//              toolkit's folder (skipped without NVRTC).
// The compiler is a stand-in with NVRTC's search rules (and, for fp16,
// the real NVRTC's toolkit folders), so only the cache's own work is
// timed. Two floors, for the same entry bytes: a `pread` from a file
// already open (what a tier hit does at best) and open+pread+close.
//
//   include_hit [--rounds=2000] [--smoke] [--only=plain|headers20|fp16] (for a profiler)
#include <fcntl.h>
#include <unistd.h>

#include <kcache/cache.h>
#include <kcache/version.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "stand_in_compiler.h"

namespace kcache::bench {
namespace {

void check(const Status& status, const std::string& what) {
  if (status.is_ok()) return;
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.to_string().c_str());
  std::exit(1);
}

void write_text(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(file);
}

std::string body() {
  std::string text = "extern \"C\" __global__ void k(float* x, int n) {\n";
  while (text.size() < 4000) {
    text += "  if (threadIdx.x < n) x[threadIdx.x] = x[threadIdx.x] * 2.0f + 1.0f;\n";
  }
  return text + "}\n";
}

std::string header(int i) {
  std::string text = "#pragma once\n";
  if (i == 0) {
    for (int j = 1; j <= 5; ++j) text += "#include \"h" + std::to_string(j) + ".h\"\n";
  }
  while (text.size() < 10'000) {
    text += "__device__ inline float f" + std::to_string(i) + "_" + std::to_string(text.size()) +
            "(float v) { return v * " + std::to_string(i) + ".5f; }\n";
  }
  return text;
}

struct Case {
  std::string name;
  KernelRequest request;
  std::unique_ptr<StandIn> compiler;
  std::vector<double> samples;
};

int run(int argc, char** argv) {
  Args args(argc, argv);
  const bool smoke = args.flag("smoke");
  const std::string only = args.get("only").value_or("");
  const int rounds = smoke ? 20 : static_cast<int>(args.number("rounds", 2000));
  TempDir dir("kcache-include-hit-");
  const std::string inc = dir.path() + "/inc";
  std::filesystem::create_directories(inc);
  std::uint64_t header_bytes = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string text = header(i);
    header_bytes += text.size();
    write_text(inc + "/h" + std::to_string(i) + ".h", text);
  }

  CompilerInputs nvrtc_rules;
  nvrtc_rules.dialect = "nvrtc";
  std::vector<Case> cases;
  cases.push_back(
      {"plain", {}, std::make_unique<StandIn>(nvrtc_rules, "include_hit", 10 * 1024), {}});
  cases.back().request.source = body();
  cases.push_back(
      {"headers20", {}, std::make_unique<StandIn>(nvrtc_rules, "include_hit", 10 * 1024), {}});
  std::string includes = "#include \"h0.h\"\n";
  for (int i = 6; i < 20; ++i) includes += "#include <h" + std::to_string(i) + ".h>\n";
  cases.back().request.source = includes + body();
  cases.back().request.options = "-I" + inc;

  CompilerConfig config;
  config.backend = "nvrtc";
  if (auto nvrtc = make_compiler(config); nvrtc && !(*nvrtc)->inputs().toolkit_dirs.empty()) {
    CompilerInputs toolkit = nvrtc_rules;
    toolkit.toolkit_dirs = (*nvrtc)->inputs().toolkit_dirs;
    cases.push_back({"fp16", {}, std::make_unique<StandIn>(toolkit, "include_hit", 10 * 1024), {}});
    cases.back().request.source = "#include <cuda_fp16.h>\n" + body();
  } else {
    std::printf("fp16: skipped (no NVRTC with toolkit headers)\n");
  }
  for (auto& c : cases) {
    c.request.kernel_names = {"k"};
    c.request.target = Target{"sm_90", "", 0};
  }

  CacheOptions options;
  options.cache_dir = dir.path() + "/cache";
  options.memory_cache_size = 0;
  options.read_environment = false;
  options.system_db_path = dir.path() + "/none";
  options.log_level = LogLevel::kError;
  {
    auto warm = Cache::open(options);
    for (auto& c : cases)
      check(warm.value()->get_or_compile(c.request, *c.compiler).status(), c.name);
  }
  auto cache = std::move(*Cache::open(options));

  // The floors read the same bytes: the user log itself, at the last entry.
  const std::string log = dir.path() + "/cache/" KCACHE_VERSION_STRING "/sm_90.ukdb";
  const auto log_size = std::filesystem::file_size(log);
  const std::size_t entry = std::min<std::uint64_t>(log_size, 11 * 1024);
  std::vector<std::uint8_t> buffer(entry);
  const int open_fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
  std::vector<double> floor_open, floor_pread;

  std::mt19937 random(42);
  std::vector<int> order;
  for (std::size_t i = 0; i < cases.size() + 2; ++i) order.push_back(static_cast<int>(i));
  for (int round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), random);
    for (int which : order) {
      const auto start = Clock::now();
      if (which == static_cast<int>(cases.size())) {
        (void)::pread(open_fd, buffer.data(), entry, static_cast<off_t>(log_size - entry));
        floor_pread.push_back(micros_since(start, Clock::now()));
      } else if (which == static_cast<int>(cases.size()) + 1) {
        const int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
        (void)::pread(fd, buffer.data(), entry, static_cast<off_t>(log_size - entry));
        ::close(fd);
        floor_open.push_back(micros_since(start, Clock::now()));
      } else {
        Case& c = cases[static_cast<std::size_t>(which)];
        if (!only.empty() && c.name != only) continue;
        auto hit = cache->get_or_compile(c.request, *c.compiler);
        const double us = micros_since(start, Clock::now());
        if (!hit || hit->tier != TierKind::kUser) {
          std::fprintf(stderr, "%s: not a user-tier hit\n", c.name.c_str());
          return 1;
        }
        c.samples.push_back(us);
      }
    }
  }
  ::close(open_fd);

  const Summary pread_floor = summarize(floor_pread);
  const Summary open_floor = summarize(floor_open);
  const double plain = summarize(cases[0].samples).median;
  std::printf("include_hit: %d rounds, %zu-byte entries, 20 headers of %llu bytes in all\n\n",
              rounds, entry, static_cast<unsigned long long>(header_bytes));
  std::printf("| request | median us | p90 us | / plain | / pread floor | / open+pread+close |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (auto& c : cases) {
    const Summary s = summarize(c.samples);
    std::printf("| %s | %.2f | %.2f | %.2fx | %.2fx | %.2fx |\n", c.name.c_str(), s.median, s.p90,
                s.median / plain, s.median / pread_floor.median, s.median / open_floor.median);
  }
  std::printf("| floor: pread, open file | %.2f | %.2f | | | |\n", pread_floor.median,
              pread_floor.p90);
  std::printf("| floor: open+pread+close | %.2f | %.2f | | | |\n", open_floor.median,
              open_floor.p90);
  return 0;
}

}  // namespace
}  // namespace kcache::bench

int main(int argc, char** argv) { return kcache::bench::run(argc, argv); }
