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
#include <kcache/advanced.h>
#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/key.h>
#include <kcache/options.h>
#include <kcache/status.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "demo_common.h"
#include "kernel_library.h"
#include "opencl_runner.h"

namespace {

using kcache_demo::Clock;
using kcache_demo::KernelSpec;
using kcache_demo::ms_between;

constexpr char kProgram[] = "kcache_demo";

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

using Options = kcache_demo::DemoOptions;

// Returns nullopt (after printing why) on a usage error.
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  if (!kcache_demo::parse_flags(kProgram, argc, argv, kcache_demo::demo_flags(options))) {
    return std::nullopt;
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
  PoclCacheGuard() : set_kernel_cache_(kcache_demo::set_env_default("POCL_KERNEL_CACHE", "0")) {
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
  if (fetched->metadata(kcache::kWarmedField) == std::optional<std::string>("no")) {
    outcome.note = "stored without a warmup: PoCL compiles its work-group code at the first run";
  }

  kcache::Status loaded = (*run)->load_binary(fetched->binary());
  if (!loaded.is_ok() && fetched->tier != kcache::TierKind::kCompiled) {
    // A stored binary the platform refuses (built for another PoCL, say):
    // the cache evicts it and compiles it again.
    kcache::AdvancedCache(cache).reject(*fetched, loaded.message());
    fetched = cache.get_or_compile(request, compiler);
    if (!fetched) {
      outcome.why = "kcache could not fetch it again: " + fetched.status().to_string();
      return outcome;
    }
    outcome.tier = std::string(kcache::tier_name(fetched->tier));
    loaded = (*run)->load_binary(fetched->binary());
  }
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
    const KernelSpec* spec = kcache_demo::find_kernel(kProgram, library, *options.print_source);
    if (spec == nullptr) return 1;
    std::printf("%s", spec->source.c_str());
    return 0;
  }

  std::optional<kcache_demo::Report> baseline;
  if (options.baseline) {
    baseline = kcache_demo::read_baseline(kProgram, *options.baseline);
    if (!baseline) return 1;
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
  const std::unique_ptr<kcache::Cache> cache = kcache_demo::open_cache(kProgram, options.cache_dir);
  if (!cache) return 1;
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

  std::printf("kcache demo: %zu generated OpenCL kernels (%s)\n", library.size(),
              kcache_demo::count_families(library).c_str());
  std::printf("  device     %s\n", (*device)->description().c_str());
  kcache_demo::print_cache_line(cache->config());
  std::printf("  PoCL       %s\n", pocl_cache.describe().c_str());
  std::printf("  ready = fetch (kcache get_or_compile) + load (binary -> cl_kernel) + 1st run\n\n");

  std::printf("%-26s %-8s %10s %9s %10s %10s  %s\n", "kernel", "tier", "fetch ms", "load ms",
              "1st run ms", "ready ms", "result");
  std::fflush(stdout);  // kcache's own warnings go to stderr; keep them in order
  kcache_demo::Totals totals;
  double fetch_ms = 0;  // the stages of totals.ready_ms
  double load_ms = 0;
  double launch_ms = 0;
  for (const auto& spec : library) {
    const KernelOutcome outcome = run_kernel(spec, *cache, **compiler, **device);
    std::printf("%-26s %-8s %10.1f %9.1f %10.1f %10.1f  %s\n", spec.name.c_str(),
                outcome.tier.c_str(), outcome.fetch_ms, outcome.load_ms, outcome.launch_ms,
                outcome.ready_ms, outcome.ok ? "ok" : "FAIL");
    if (!outcome.ok) kcache_demo::print_indented(outcome.why);
    if (!outcome.note.empty()) kcache_demo::print_indented("note: " + outcome.note);
    std::fflush(stdout);
    totals.add(outcome.tier, outcome.ok, outcome.ready_ms);
    fetch_ms += outcome.fetch_ms;
    load_ms += outcome.load_ms;
    launch_ms += outcome.launch_ms;
  }

  kcache_demo::print_totals(totals);
  std::printf("total ready: %.1f ms (fetch %.1f + load %.1f + 1st run %.1f)\n", totals.ready_ms,
              fetch_ms, load_ms, launch_ms);
  kcache_demo::print_cache_stats(cache->stats());

  if (baseline) kcache_demo::print_speed_up(*baseline, totals);
  if (options.report &&
      !kcache_demo::write_report(kProgram, *options.report,
                                 {{"mode", options.quick ? "quick" : "full"}}, totals,
                                 {{"total_ready_ms", totals.ready_ms},
                                  {"total_fetch_ms", fetch_ms},
                                  {"total_load_ms", load_ms},
                                  {"total_launch_ms", launch_ms}})) {
    return 1;
  }
  return totals.ok == totals.kernels ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_options(argc, argv);
  if (!options || options->help) return kcache_demo::print_usage(kUsage, options.has_value());
  return run_demo(*options);
}
