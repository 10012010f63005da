// Full API hits of kernels that include a large header library, as CuPy's
// compiles include CCCL (cub, thrust, libcudacxx) through -I: each of K
// distinct kernels (CuPy builds one source per element type and operation)
// asked once by a fresh Cache, as a new process asks (the first pays for
// reading the headers; the others for what each distinct source adds), and
// then once more by the same Cache (the request seen before); first with
// the key-head records an earlier process left (inputs/scan_records.h),
// then with none, in the same run.
//
// The library is the CUDA toolkit's CCCL (`<toolkit>/include/cccl`), passed
// with -I as CuPy passes its own copy, so every header is scanned and keyed.
// The compiler is a stand-in with NVRTC's search rules that compiles
// instantly: only the cache's own work is timed. The plain row is the same
// hit for a kernel that includes nothing.
//
//   library_hit [--library=DIR] [--kernels=46] [--rounds=5] [--smoke]
//   exit 125 when no CCCL folder is found.
#include <kcache/cache.h>
#include <kcache/version.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.h"
#include "stand_in_compiler.h"

namespace kcache::bench {
namespace {

std::optional<std::string> find_library(const Args& args) {
  if (auto given = args.get("library")) return *given;
  for (const char* root : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"}) {
    if (root == nullptr) continue;
    const std::string dir = std::string(root) + "/include/cccl";
    if (std::filesystem::exists(dir + "/cub/block/block_reduce.cuh")) return dir;
  }
  return std::nullopt;
}

// Kernel `i`: what a CuPy reduction's source looks like to the scanner
// (its includes, a block reduction and a body of its own).
KernelRequest kernel(int i, const std::string& library) {
  static const char* const kTypes[] = {"float", "double", "int", "long long"};
  const std::string type = kTypes[i % 4];
  KernelRequest request;
  request.source =
      "#include <cuda/std/type_traits>\n#include <cuda/std/complex>\n"
      "#include <cub/block/block_reduce.cuh>\n#include <thrust/complex.h>\n"
      "using T = " +
      type + ";\nextern \"C\" __global__ void k" + std::to_string(i) +
      "(const T* x, T* y, int n) {\n"
      "  using R = cub::BlockReduce<T, 128>;\n"
      "  __shared__ typename R::TempStorage s;\n"
      "  T v = threadIdx.x < n ? x[threadIdx.x] * T(" +
      std::to_string(i + 1) +
      ") : T(0);\n  T r = R(s).Sum(v);\n"
      "  if (threadIdx.x == 0) y[blockIdx.x] = r;\n}\n";
  request.options = "-I" + library + " --std=c++17 -DFIRST_PASS=" + std::to_string(i % 2);
  // Named first: "k" + a temporary string makes gcc 12 -O2 warn
  // (-Wrestrict, wrongly) inside std::string's insert.
  const std::string number = std::to_string(i);
  request.kernel_names = {"k" + number};
  request.target = Target{"sm_90", "", 0};
  return request;
}

int run(int argc, char** argv) {
  Args args(argc, argv);
  const bool smoke = args.flag("smoke");
  const int kernels = smoke ? 3 : static_cast<int>(args.number("kernels", 46));
  const int rounds = smoke ? 1 : static_cast<int>(args.number("rounds", 5));
  const auto library = find_library(args);
  if (!library) {
    std::printf("library_hit: no CCCL folder (give --library=DIR)\n");
    return 125;
  }
  TempDir dir("kcache-library-hit-");
  CompilerInputs nvrtc_rules;
  nvrtc_rules.dialect = "nvrtc";
  StandIn compiler(nvrtc_rules, "library_hit", 16 * 1024);
  std::vector<KernelRequest> requests;
  for (int i = 0; i < kernels; ++i) requests.push_back(kernel(i, *library));
  KernelRequest plain = kernel(0, *library);
  plain.source = plain.source.substr(plain.source.find("using T"));
  plain.options.clear();

  CacheOptions options;
  options.cache_dir = dir.path() + "/cache";
  options.read_environment = false;
  options.system_db_path = dir.path() + "/none";
  options.log_level = LogLevel::kError;
  {
    auto warm = Cache::open(options);
    for (const auto& request : requests) {
      auto got = warm.value()->get_or_compile(request, compiler);
      if (!got) {
        std::fprintf(stderr, "library_hit: %s\n", got.status().to_string().c_str());
        return 1;
      }
    }
    (void)warm.value()->get_or_compile(plain, compiler);
  }

  // Each round as a new process: a fresh Cache asks every kernel once,
  // then once more; with the key-head records the warm-up left
  // (<version>/scans/), and with none (a file where their folder would be,
  // so that none can be written either).
  const std::string records = dir.path() + "/cache/" KCACHE_VERSION_STRING "/scans";
  struct Samples {
    std::vector<double> first, others, again, whole;
  };
  Samples with, without;
  std::vector<double> plain_first;
  const auto round_of = [&](Samples& out) -> bool {
    auto cache = std::move(*Cache::open(options));
    const auto round_start = Clock::now();
    for (int i = 0; i < kernels; ++i) {
      const auto start = Clock::now();
      auto hit = cache->get_or_compile(requests[static_cast<std::size_t>(i)], compiler);
      const double us = micros_since(start, Clock::now());
      if (!hit || hit->tier != TierKind::kUser) {
        std::fprintf(stderr, "library_hit: kernel %d is not a user-tier hit: %s\n", i,
                     hit ? "another tier" : hit.status().to_string().c_str());
        return false;
      }
      (i == 0 ? out.first : out.others).push_back(us);
    }
    out.whole.push_back(micros_since(round_start, Clock::now()));
    for (const auto& request : requests) {
      const auto start = Clock::now();
      (void)cache->get_or_compile(request, compiler);
      out.again.push_back(micros_since(start, Clock::now()));
    }
    return true;
  };
  for (int round = 0; round < rounds; ++round) {
    if (!round_of(with)) return 1;
    auto fresh = std::move(*Cache::open(options));
    const auto start = Clock::now();
    (void)fresh->get_or_compile(plain, compiler);
    plain_first.push_back(micros_since(start, Clock::now()));
  }
  const std::size_t kept = std::distance(std::filesystem::directory_iterator(records),
                                         std::filesystem::directory_iterator());
  std::filesystem::remove_all(records);
  std::FILE* blocker = std::fopen(records.c_str(), "w");
  if (blocker != nullptr) std::fclose(blocker);
  for (int round = 0; round < rounds; ++round) {
    if (!round_of(without)) return 1;
  }

  std::printf("library_hit: %s, %d kernels, %d rounds, %zu records kept\n\n", library->c_str(),
              kernels, rounds, kept);
  std::printf("| hit | with records: median us | p90 us | without: median us | p90 us |\n");
  std::printf("|---|---|---|---|---|\n");
  const auto row = [](const char* name, const std::vector<double>& a,
                      const std::vector<double>& b) {
    const Summary x = summarize(a);
    const Summary y = summarize(b);
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", name, x.median, x.p90, y.median, y.p90);
  };
  row("first kernel of a fresh Cache", with.first, without.first);
  row("each other distinct kernel", with.others, without.others);
  row("a kernel asked again", with.again, without.again);
  row("all kernels once, fresh Cache (whole)", with.whole, without.whole);
  const Summary p = summarize(plain_first);
  std::printf("| plain kernel (no includes), fresh Cache | %.1f | %.1f | | |\n", p.median, p.p90);
  return 0;
}

}  // namespace
}  // namespace kcache::bench

int main(int argc, char** argv) { return kcache::bench::run(argc, argv); }
