// kcache_demo: a small run-time kernel library (GEMM, convolution,
// reduction, softmax) whose every kernel is fetched through kcache, loaded
// from the returned binary, run on OpenCL and checked against a CPU
// reference. Run it twice with the same cache: the first run compiles, the
// second loads, and the table shows what each kernel cost until it was ready.
//
//   kcache_demo [--quick] [--cache-dir DIR] [--report FILE] [--baseline FILE]
//   kcache_demo --list | --list-devices | --print-source NAME | --help
//
// Exit status: 0 when every kernel was fetched and its result is right, 1
// when any was not (the reason is printed), 2 on a usage error.
#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/key.h>
#include <kcache/options.h>
#include <kcache/status.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "kernel_library.h"
#include "opencl_runner.h"

namespace {

using Clock = std::chrono::steady_clock;
using kcache_demo::KernelSpec;

constexpr std::string_view kUsage =
    "usage: kcache_demo [--quick] [--cache-dir DIR] [--report FILE] [--baseline FILE]\n"
    "       kcache_demo --list | --list-devices | --print-source NAME | --help\n"
    "\n"
    "Fetches every kernel of a generated OpenCL kernel library through kcache, runs\n"
    "it from the returned binary and checks it against a CPU reference.\n"
    "\n"
    "  --quick          8 kernels (two of each family) instead of all\n"
    "  --cache-dir DIR  the user cache dir (default: KCACHE_CUSTOM_CACHE_DIR, then\n"
    "                   ~/.cache/kcache); the version folder is appended\n"
    "  --report FILE    write the totals to FILE (key=value lines)\n"
    "  --baseline FILE  compare with an earlier report and print the speed-up\n"
    "  --list           print the kernel names and exit\n"
    "  --list-devices   print the OpenCL devices; exit 1 when there is none\n"
    "  --print-source NAME  print the generated OpenCL C of kernel NAME\n"
    "\n"
    "Unless set already, POCL_KERNEL_CACHE=0 and a private POCL_CACHE_DIR keep\n"
    "PoCL's own kernel cache out of the measurement.\n";

struct Options {
  bool quick = false;
  bool list = false;
  bool list_devices = false;
  bool help = false;
  std::optional<std::string> cache_dir;
  std::optional<std::string> report;
  std::optional<std::string> baseline;
  std::optional<std::string> print_source;
};

// Returns nullopt (after printing why) on a usage error.
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::optional<std::string>& field) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kcache_demo: %s needs a value\n", argv[i]);
        return false;
      }
      field = argv[++i];
      return true;
    };
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--list-devices") {
      options.list_devices = true;
    } else if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--cache-dir") {
      if (!value(options.cache_dir)) return std::nullopt;
    } else if (arg == "--report") {
      if (!value(options.report)) return std::nullopt;
    } else if (arg == "--baseline") {
      if (!value(options.baseline)) return std::nullopt;
    } else if (arg == "--print-source") {
      if (!value(options.print_source)) return std::nullopt;
    } else {
      std::fprintf(stderr, "kcache_demo: unknown argument '%s'\n", argv[i]);
      return std::nullopt;
    }
  }
  return options;
}

// PoCL keeps its own cache of compiled kernels (~/.cache/pocl by default).
// Left on, it would make a "cold" kcache run fast for the wrong reason, so
// the demo turns it off and gives PoCL a private, fresh folder for the files
// it still writes (baseline.md §2): before the first OpenCL call, and only
// where the user has not chosen otherwise. The folder is removed at exit.
class PoclCacheGuard {
 public:
  PoclCacheGuard() {
    if (std::getenv("POCL_KERNEL_CACHE") == nullptr) {
      setenv("POCL_KERNEL_CACHE", "0", 1);
      set_kernel_cache_ = true;
    }
    if (std::getenv("POCL_CACHE_DIR") == nullptr) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern =
          std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kcache-demo-pocl-XXXXXX";
      if (mkdtemp(pattern.data()) != nullptr) {
        private_dir_ = pattern;
        setenv("POCL_CACHE_DIR", private_dir_.c_str(), 1);
      } else {
        std::fprintf(stderr,
                     "kcache_demo: warning: cannot create a private POCL_CACHE_DIR (%s); PoCL "
                     "uses its default folder\n",
                     pattern.c_str());
      }
    }
  }
  ~PoclCacheGuard() {
    if (private_dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(private_dir_, ignored);
  }
  PoclCacheGuard(const PoclCacheGuard&) = delete;
  PoclCacheGuard& operator=(const PoclCacheGuard&) = delete;

  std::string describe() const {
    const char* kernel_cache = std::getenv("POCL_KERNEL_CACHE");
    const char* cache_dir = std::getenv("POCL_CACHE_DIR");
    std::string text = "POCL_KERNEL_CACHE=" + std::string(kernel_cache ? kernel_cache : "") +
                       (set_kernel_cache_ ? "" : " (yours)");
    text += ", POCL_CACHE_DIR=" + std::string(cache_dir ? cache_dir : "(PoCL's default)") +
            (private_dir_.empty() ? " (yours)" : " (private, removed at exit)");
    if (kernel_cache != nullptr && std::string_view(kernel_cache) != "0") {
      text += "\n             note: PoCL's own kernel cache is on; cold compiles may look fast";
    }
    return text;
  }

 private:
  bool set_kernel_cache_ = false;
  std::string private_dir_;
};

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// What happened to one kernel: one table row.
struct KernelOutcome {
  std::string tier = "-";  // kcache::tier_name, "-" when it was not fetched
  double fetch_ms = 0;     // get_or_compile
  double load_ms = 0;      // program from the binary, built, kernel created
  double launch_ms = 0;    // the first launch, to clFinish
  double ready_ms = 0;     // all three: what a user waits for
  bool ok = false;
  std::string why;   // when !ok
  std::string note;  // something worth knowing even when ok
};

// Fetches `spec` through the cache, loads and runs it, checks the result.
KernelOutcome run_kernel(const KernelSpec& spec, kcache::Cache& cache, kcache::Compiler& compiler,
                         const kcache_demo::OpenClDevice& device) {
  KernelOutcome outcome;
  // The inputs go to the device first: uploading them is the same cold or
  // warm and is not part of getting the kernel ready.
  auto run = kcache_demo::KernelRun::prepare(device.context(), device.device(), spec);
  if (!run) {
    outcome.why = "preparing the buffers: " + run.status().to_string();
    return outcome;
  }

  kcache::KernelRequest request;
  request.source = spec.source;
  request.kernel_names = {spec.name};
  request.options = spec.build_options;
  // target stays empty: the OpenCL backend fills in the device it sees.
  request.warmup = [&spec](const kcache::BuiltProgram& built) {
    return kcache_demo::warm_up(built, spec);
  };

  const Clock::time_point start = Clock::now();
  auto fetched = cache.get_or_compile(request, compiler);
  const Clock::time_point fetched_at = Clock::now();
  outcome.fetch_ms = ms_between(start, fetched_at);
  if (!fetched) {
    const kcache::Status status = fetched.status();
    outcome.why = "kcache could not fetch it: " + status.to_string();
    if (!status.details().empty()) outcome.why += "\n" + status.details();
    return outcome;
  }
  outcome.tier = std::string(kcache::tier_name(fetched->tier));
  // The warmup is not part of the key, so an entry stored by a program that
  // did not run its kernels (`kcache compile`, say) is served here as well.
  if (fetched->metadata("warmed") == std::optional<std::string>("no")) {
    outcome.note = "stored without a warmup: PoCL compiles its work-group code at the first run";
  }

  kcache::Status loaded = (*run)->load_binary(fetched->binary());
  const Clock::time_point loaded_at = Clock::now();
  outcome.load_ms = ms_between(fetched_at, loaded_at);
  if (!loaded.is_ok()) {
    outcome.why = "loading the cached binary: " + loaded.to_string();
    if (!loaded.details().empty()) outcome.why += "\n" + loaded.details();
    return outcome;
  }

  kcache::Status launched = (*run)->launch();
  const Clock::time_point ready_at = Clock::now();
  outcome.launch_ms = ms_between(loaded_at, ready_at);
  outcome.ready_ms = ms_between(start, ready_at);
  if (!launched.is_ok()) {
    outcome.why = "running it: " + launched.to_string();
    return outcome;
  }

  auto output = (*run)->read_output();
  if (!output) {
    outcome.why = "reading the result: " + output.status().to_string();
    return outcome;
  }
  outcome.why = kcache_demo::check_result(*output, spec.reference(spec.args), spec.tolerance);
  outcome.ok = outcome.why.empty();
  if (!outcome.ok) outcome.why = "wrong result: " + outcome.why;
  return outcome;
}

struct Totals {
  int kernels = 0;
  int ok = 0;
  std::map<std::string, int> tiers;  // tier name -> kernels
  double ready_ms = 0;
  double fetch_ms = 0;
  double load_ms = 0;
  double launch_ms = 0;
};

constexpr std::string_view kTierNames[] = {"compiled", "user", "system", "remote", "memory"};

bool write_report(const std::string& path, const Totals& totals, bool quick) {
  std::ofstream out(path, std::ios::trunc);
  out << "# kcache_demo report\n"
      << "mode=" << (quick ? "quick" : "full") << "\n"
      << "kernels=" << totals.kernels << "\n"
      << "ok=" << totals.ok << "\n"
      << "failed=" << totals.kernels - totals.ok << "\n";
  for (std::string_view tier : kTierNames) {
    const auto found = totals.tiers.find(std::string(tier));
    out << "tier." << tier << "=" << (found == totals.tiers.end() ? 0 : found->second) << "\n";
  }
  char numbers[256];
  std::snprintf(numbers, sizeof numbers,
                "total_ready_ms=%.3f\ntotal_fetch_ms=%.3f\ntotal_load_ms=%.3f\n"
                "total_launch_ms=%.3f\n",
                totals.ready_ms, totals.fetch_ms, totals.load_ms, totals.launch_ms);
  out << numbers;
  out.close();
  return !out.fail();
}

// A report's key=value lines; nullopt when the file cannot be read.
std::optional<std::map<std::string, std::string>> read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::map<std::string, std::string> values;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

double number(const std::map<std::string, std::string>& report, const std::string& key) {
  const auto found = report.find(key);
  return found == report.end() ? 0.0 : std::strtod(found->second.c_str(), nullptr);
}

void print_speed_up(const std::map<std::string, std::string>& baseline, const Totals& totals) {
  const double cold_ms = number(baseline, "total_ready_ms");
  const int cold_kernels = static_cast<int>(number(baseline, "kernels"));
  const int cold_compiled = static_cast<int>(number(baseline, "tier.compiled"));
  if (cold_kernels != totals.kernels) {
    std::printf(
        "speed-up: not comparable: the baseline ran %d kernels, this run %d (use the same "
        "--quick setting)\n",
        cold_kernels, totals.kernels);
    return;
  }
  if (cold_ms <= 0 || totals.ready_ms <= 0) {
    std::printf("speed-up: the baseline report has no total_ready_ms\n");
    return;
  }
  std::printf("speed-up: cold %.1f ms -> warm %.1f ms = %.1f x\n", cold_ms, totals.ready_ms,
              cold_ms / totals.ready_ms);
  const auto compiled = totals.tiers.find("compiled");
  if (cold_compiled != cold_kernels) {
    std::printf("          note: the baseline was not fully cold: %d of %d kernels compiled\n",
                cold_compiled, cold_kernels);
  }
  if (compiled != totals.tiers.end() && compiled->second > 0) {
    std::printf("          note: this run was not fully warm: %d kernels compiled\n",
                compiled->second);
  }
}

// Prints `text` indented under a table row.
void print_indented(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    // A compile log can run to hundreds of lines; the first ones say why.
    if (++count > 40) {
      std::printf("      ... (log cut)\n");
      break;
    }
    std::printf("      %s\n", line.c_str());
  }
}

int run_demo(const Options& options) {
  std::vector<KernelSpec> library = kcache_demo::make_kernel_library();
  if (options.quick) library = kcache_demo::quick_subset(std::move(library));
  if (options.list) {
    for (const auto& spec : library) {
      std::printf("%-8s %-26s %s\n", spec.family.c_str(), spec.name.c_str(),
                  spec.build_options.c_str());
    }
    return 0;
  }
  if (options.print_source) {
    for (const auto& spec : library) {
      if (spec.name != *options.print_source) continue;
      std::printf("%s", spec.source.c_str());
      return 0;
    }
    std::fprintf(stderr, "kcache_demo: no kernel named '%s' (see --list)\n",
                 options.print_source->c_str());
    return 1;
  }

  std::optional<std::map<std::string, std::string>> baseline;
  if (options.baseline) {
    baseline = read_report(*options.baseline);
    if (!baseline) {
      std::fprintf(stderr, "kcache_demo: cannot read the baseline report %s\n",
                   options.baseline->c_str());
      return 1;
    }
  }

  const PoclCacheGuard pocl_cache;  // before the first OpenCL call
  if (options.list_devices) {
    const auto devices = kcache_demo::list_opencl_devices();
    for (const auto& line : devices) std::printf("%s\n", line.c_str());
    if (devices.empty()) std::fprintf(stderr, "kcache_demo: no OpenCL device found\n");
    return devices.empty() ? 1 : 0;
  }

  auto device = kcache_demo::OpenClDevice::open();
  if (!device) {
    std::fprintf(stderr, "kcache_demo: %s\n", device.status().to_string().c_str());
    return 1;
  }
  kcache::CacheOptions cache_options;
  cache_options.cache_dir = options.cache_dir;
  auto cache = kcache::Cache::open(cache_options);
  if (!cache) {
    std::fprintf(stderr, "kcache_demo: cannot open the cache: %s\n",
                 cache.status().to_string().c_str());
    return 1;
  }
  // One compiler for all kernels, building in the demo's own context, so
  // its warmup runs on the same device the demo then loads binaries on.
  // Fields are set one by one: a designated initializer that skips the
  // "command" fields trips GCC's -Wmissing-field-initializers.
  kcache::CompilerConfig compiler_config;
  compiler_config.backend = "opencl";
  compiler_config.opencl_context = (*device)->context();
  compiler_config.opencl_device_id = (*device)->device();
  auto compiler = kcache::make_compiler(compiler_config);
  if (!compiler) {
    std::fprintf(stderr, "kcache_demo: no OpenCL compiler: %s\n",
                 compiler.status().to_string().c_str());
    return 1;
  }

  std::map<std::string, int> families;
  for (const auto& spec : library) ++families[spec.family];
  std::string family_counts;
  for (const auto& [family, count] : families) {
    family_counts += (family_counts.empty() ? "" : ", ") + family + " " + std::to_string(count);
  }
  const kcache::ResolvedConfig& config = (*cache)->config();
  std::printf("kcache demo: %zu generated OpenCL kernels (%s)\n", library.size(),
              family_counts.c_str());
  std::printf("  device     %s\n", (*device)->description().c_str());
  if (config.enabled) {
    std::printf("  cache      %s\n", config.user_dir.c_str());
  } else {
    std::printf("  cache      DISABLED (%s): every kernel is compiled\n",
                config.disabled_reason.c_str());
  }
  std::printf("  PoCL       %s\n", pocl_cache.describe().c_str());
  std::printf("  ready = fetch (kcache get_or_compile) + load (binary -> cl_kernel) + 1st run\n\n");

  std::printf("%-26s %-8s %10s %9s %10s %10s  %s\n", "kernel", "tier", "fetch ms", "load ms",
              "1st run ms", "ready ms", "result");
  std::fflush(stdout);  // kcache's own warnings go to stderr; keep them in order
  Totals totals;
  for (const auto& spec : library) {
    const KernelOutcome outcome = run_kernel(spec, **cache, **compiler, **device);
    std::printf("%-26s %-8s %10.1f %9.1f %10.1f %10.1f  %s\n", spec.name.c_str(),
                outcome.tier.c_str(), outcome.fetch_ms, outcome.load_ms, outcome.launch_ms,
                outcome.ready_ms, outcome.ok ? "ok" : "FAIL");
    if (!outcome.ok) print_indented(outcome.why);
    if (!outcome.note.empty()) print_indented("note: " + outcome.note);
    std::fflush(stdout);
    ++totals.kernels;
    totals.ok += outcome.ok ? 1 : 0;
    ++totals.tiers[outcome.tier];
    totals.ready_ms += outcome.ready_ms;
    totals.fetch_ms += outcome.fetch_ms;
    totals.load_ms += outcome.load_ms;
    totals.launch_ms += outcome.launch_ms;
  }

  std::string tier_counts;
  for (std::string_view tier : kTierNames) {
    const auto found = totals.tiers.find(std::string(tier));
    if (found == totals.tiers.end()) continue;
    tier_counts +=
        (tier_counts.empty() ? "" : ", ") + std::string(tier) + " " + std::to_string(found->second);
  }
  if (const auto unfetched = totals.tiers.find("-"); unfetched != totals.tiers.end()) {
    tier_counts += (tier_counts.empty() ? "" : ", ") + std::string("not fetched ") +
                   std::to_string(unfetched->second);
  }
  std::printf("\ntotal: %d kernels, %d ok, %d failed; tiers: %s\n", totals.kernels, totals.ok,
              totals.kernels - totals.ok, tier_counts.c_str());
  std::printf("total ready: %.1f ms (fetch %.1f + load %.1f + 1st run %.1f)\n", totals.ready_ms,
              totals.fetch_ms, totals.load_ms, totals.launch_ms);
  const kcache::CacheStats stats = (*cache)->stats();
  std::printf(
      "kcache stats: %llu requests, %llu user hits, %llu compiles, %llu compile failures, "
      "%llu store failures\n",
      static_cast<unsigned long long>(stats.requests),
      static_cast<unsigned long long>(stats.user_hits),
      static_cast<unsigned long long>(stats.compiles),
      static_cast<unsigned long long>(stats.compile_failures),
      static_cast<unsigned long long>(stats.store_failures));

  if (baseline) print_speed_up(*baseline, totals);
  if (options.report && !write_report(*options.report, totals, options.quick)) {
    std::fprintf(stderr, "kcache_demo: cannot write the report %s\n", options.report->c_str());
    return 1;
  }
  return totals.ok == totals.kernels ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "%s", kUsage.data());
    return 2;
  }
  if (options->help) {
    std::printf("%s", kUsage.data());
    return 0;
  }
  return run_demo(*options);
}
