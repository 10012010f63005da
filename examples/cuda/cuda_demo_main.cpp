// kcache_cuda_demo: the demo's kernel library (GEMM, convolution, reduction,
// softmax) in CUDA C++. Every kernel is fetched through kcache's CUDA
// loader (cache or NVRTC -> CUBIN -> cuModuleLoadData -> CUfunction), run on
// the GPU and checked against the CPU reference of its OpenCL twin. Run it
// twice with the same cache: the first run compiles, the second loads, and
// the table shows what each kernel cost until it was ready.
//
//   kcache_cuda_demo [--quick] [--cache-dir DIR] [--report FILE] [--baseline FILE]
//   kcache_cuda_demo --compile-only [--target ARCH] [the same options]
//   kcache_cuda_demo --list | --list-devices | --print-source NAME | --help
//
// --compile-only needs NVRTC but no GPU: it fetches every kernel through
// the cache for an explicit target and checks the CUBIN holds its symbol.
//
// Exit status: 0 when every kernel was fetched and its result is right, 1
// when any was not or the GPU, driver or NVRTC is missing (the reason is
// printed), 2 on a usage error.
#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/cuda.h>
#include <kcache/key.h>
#include <kcache/options.h>
#include <kcache/status.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_driver.h"
#include "cuda_kernel_library.h"
#include "cuda_runner.h"

namespace {

using Clock = std::chrono::steady_clock;
using kcache_demo::CudaKernelSpec;

constexpr std::string_view kUsage =
    "usage: kcache_cuda_demo [--quick] [--cache-dir DIR] [--report FILE] [--baseline FILE]\n"
    "       kcache_cuda_demo --compile-only [--target ARCH] [the same options]\n"
    "       kcache_cuda_demo --list | --list-devices | --print-source NAME | --help\n"
    "\n"
    "Fetches every kernel of a generated CUDA kernel library through kcache's CUDA\n"
    "loader (NVRTC -> CUBIN, cached), runs it on the GPU and checks it against a CPU\n"
    "reference.\n"
    "\n"
    "  --quick          8 kernels (two of each family) instead of all\n"
    "  --cache-dir DIR  the user cache dir (default: KCACHE_CUSTOM_CACHE_DIR, then\n"
    "                   ~/.cache/kcache); the version folder is appended\n"
    "  --report FILE    write the totals to FILE (key=value lines)\n"
    "  --baseline FILE  compare with an earlier report and print the speed-up\n"
    "  --compile-only   no GPU needed: fetch every kernel through the cache and NVRTC\n"
    "                   for --target (default sm_90), check each CUBIN, run nothing\n"
    "  --target ARCH    the arch for --compile-only, e.g. sm_90 or sm_90_132\n"
    "  --list           print the kernel names and exit\n"
    "  --list-devices   print the CUDA devices and the NVRTC in use; exit 1 when\n"
    "                   there is no GPU, no driver or no NVRTC\n"
    "  --print-source NAME  print the generated CUDA C++ of kernel NAME\n"
    "\n"
    "Unless set already, CUDA_CACHE_DISABLE=1 keeps the CUDA driver's own JIT cache\n"
    "(which NVRTC's final PTX -> SASS step goes through) out of the measurement.\n";

struct Options {
  bool quick = false;
  bool list = false;
  bool list_devices = false;
  bool compile_only = false;
  bool help = false;
  std::optional<std::string> target;
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
        std::fprintf(stderr, "kcache_cuda_demo: %s needs a value\n", argv[i]);
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
    } else if (arg == "--compile-only") {
      options.compile_only = true;
    } else if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--target") {
      if (!value(options.target)) return std::nullopt;
    } else if (arg == "--cache-dir") {
      if (!value(options.cache_dir)) return std::nullopt;
    } else if (arg == "--report") {
      if (!value(options.report)) return std::nullopt;
    } else if (arg == "--baseline") {
      if (!value(options.baseline)) return std::nullopt;
    } else if (arg == "--print-source") {
      if (!value(options.print_source)) return std::nullopt;
    } else {
      std::fprintf(stderr, "kcache_cuda_demo: unknown argument '%s'\n", argv[i]);
      return std::nullopt;
    }
  }
  if (options.target && !options.compile_only) {
    std::fprintf(stderr,
                 "kcache_cuda_demo: --target goes with --compile-only; a GPU run compiles for "
                 "its device\n");
    return std::nullopt;
  }
  return options;
}

// NVRTC in CUDA 13 leaves its final PTX -> SASS step to the driver's JIT,
// which keeps its own cache (~/.nv/ComputeCache): left on, a second process
// would compile faster without kcache, and a "cold" run would not be cold.
// So, before the first CUDA or NVRTC call and only where the user has not
// chosen otherwise, the demo turns it off.
class CudaJitCacheGuard {
 public:
  CudaJitCacheGuard() {
    if (std::getenv("CUDA_CACHE_DISABLE") == nullptr) {
      setenv("CUDA_CACHE_DISABLE", "1", 1);
      set_here_ = true;
    }
  }
  CudaJitCacheGuard(const CudaJitCacheGuard&) = delete;
  CudaJitCacheGuard& operator=(const CudaJitCacheGuard&) = delete;

  std::string describe() const {
    const char* value = std::getenv("CUDA_CACHE_DISABLE");
    std::string text =
        "CUDA_CACHE_DISABLE=" + std::string(value ? value : "") +
        (set_here_ ? " (set by the demo: the driver's JIT cache is off)" : " (yours)");
    if (value != nullptr && std::string_view(value) != "1") {
      text += "\n             note: the driver's JIT cache is on; cold compiles may look fast";
    }
    return text;
  }

 private:
  bool set_here_ = false;
};

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// What to ask kcache for. Template kernels name their instantiation (a name
// expression NVRTC lowers); extern "C" kernels name nothing, and the loader
// looks the plain name up.
kcache::KernelRequest make_request(const CudaKernelSpec& spec) {
  kcache::KernelRequest request;
  request.source = spec.source;
  request.options = spec.options;
  if (spec.name_expression) request.kernel_names = {spec.entry};
  return request;
}

// Appends a status's message and details (a compile log) to `why`.
std::string explain(std::string what, const kcache::Status& status) {
  what += ": " + status.to_string();
  if (!status.details().empty()) what += "\n" + status.details();
  return what;
}

// What happened to one kernel: one table row.
struct KernelOutcome {
  std::string tier = "-";  // kcache::tier_name, "-" when it was not fetched
  double fetch_ms = 0;     // GPU: get_function (fetch + cuModuleLoadData); else get_or_compile
  double launch_ms = 0;    // the first launch, to cuCtxSynchronize
  double ready_ms = 0;     // both: what a user waits for
  std::size_t bytes = 0;   // the binary (compile-only)
  std::string symbol;      // the symbol looked up (compile-only)
  bool ok = false;
  std::string why;  // when !ok
};

// The GPU run of one kernel: fetched and loaded through the loader,
// launched, checked.
KernelOutcome run_kernel(const CudaKernelSpec& spec, kcache::cuda::ModuleLoader& loader,
                         const kcache_demo::CudaDriver& driver) {
  KernelOutcome outcome;
  // The inputs go to the device first: uploading them is the same cold or
  // warm and is not part of getting the kernel ready.
  auto run = kcache_demo::CudaKernelRun::prepare(driver, spec);
  if (!run) {
    outcome.why = explain("preparing the buffers", run.status());
    return outcome;
  }
  // target stays empty: the loader fills in the current device's sm_XY_<SMs>.
  const kcache::KernelRequest request = make_request(spec);

  const Clock::time_point start = Clock::now();
  auto loaded = loader.get_function(request, spec.entry);
  const Clock::time_point loaded_at = Clock::now();
  outcome.fetch_ms = ms_between(start, loaded_at);
  if (!loaded) {
    outcome.why = explain("kcache could not fetch or load it", loaded.status());
    return outcome;
  }
  outcome.tier = std::string(kcache::tier_name(loaded->tier));
  outcome.symbol = loaded->lowered_name;

  kcache::Status launched = (*run)->launch(loaded->function);
  const Clock::time_point ready_at = Clock::now();
  outcome.launch_ms = ms_between(loaded_at, ready_at);
  outcome.ready_ms = ms_between(start, ready_at);
  if (!launched.is_ok()) {
    outcome.why = explain("running it", launched);
    return outcome;
  }
  auto output = (*run)->read_output();
  if (!output) {
    outcome.why = explain("reading the result", output.status());
    return outcome;
  }
  outcome.why = kcache_demo::check_result(*output, spec.reference(spec.args), spec.tolerance);
  outcome.ok = outcome.why.empty();
  if (!outcome.ok) outcome.why = "wrong result: " + outcome.why;
  return outcome;
}

// True when `binary` holds `symbol` as a NUL-terminated string: a CUBIN is
// an ELF file, and its string table names every kernel.
bool holds_symbol(std::span<const std::uint8_t> binary, const std::string& symbol) {
  const std::string needle = symbol + '\0';
  return std::search(binary.begin(), binary.end(), needle.begin(), needle.end()) != binary.end();
}

// The compile-only run of one kernel: fetched for `target` through the
// cache, its CUBIN checked for the kernel's symbol.
KernelOutcome compile_kernel(const CudaKernelSpec& spec, const kcache::Target& target,
                             kcache::Cache& cache, kcache::Compiler& compiler) {
  KernelOutcome outcome;
  kcache::KernelRequest request = make_request(spec);
  request.target = target;
  const Clock::time_point start = Clock::now();
  auto fetched = cache.get_or_compile(request, compiler);
  outcome.fetch_ms = ms_between(start, Clock::now());
  outcome.ready_ms = outcome.fetch_ms;
  if (!fetched) {
    outcome.why = explain("kcache could not fetch it", fetched.status());
    return outcome;
  }
  outcome.tier = std::string(kcache::tier_name(fetched->tier));
  outcome.bytes = fetched->binary().size();
  outcome.symbol = fetched->lowered_name(spec.entry);
  const std::string format = fetched->metadata("format").value_or("?");
  if (format != "cubin") {
    outcome.why = "the binary is " + format + ", not cubin";
  } else if (spec.name_expression && outcome.symbol == spec.entry) {
    outcome.why = "NVRTC did not lower the name expression " + spec.entry;
  } else if (!holds_symbol(fetched->binary(), outcome.symbol)) {
    outcome.why = "the CUBIN has no symbol " + outcome.symbol;
  }
  outcome.ok = outcome.why.empty();
  return outcome;
}

struct Totals {
  int kernels = 0;
  int ok = 0;
  std::map<std::string, int> tiers;  // tier name -> kernels
  double ready_ms = 0;
  double fetch_ms = 0;
  double launch_ms = 0;
};

constexpr std::string_view kTierNames[] = {"compiled", "user", "system", "remote", "memory"};

bool write_report(const std::string& path, const Totals& totals, const Options& options,
                  const std::string& target) {
  std::ofstream out(path, std::ios::trunc);
  out << "# kcache_cuda_demo report\n"
      << "mode=" << (options.quick ? "quick" : "full") << "\n"
      << "run=" << (options.compile_only ? "compile-only" : "gpu") << "\n"
      << "target=" << target << "\n"
      << "kernels=" << totals.kernels << "\n"
      << "ok=" << totals.ok << "\n"
      << "failed=" << totals.kernels - totals.ok << "\n";
  for (std::string_view tier : kTierNames) {
    const auto found = totals.tiers.find(std::string(tier));
    out << "tier." << tier << "=" << (found == totals.tiers.end() ? 0 : found->second) << "\n";
  }
  char numbers[256];
  std::snprintf(numbers, sizeof numbers,
                "total_ready_ms=%.3f\ntotal_fetch_load_ms=%.3f\ntotal_launch_ms=%.3f\n",
                totals.ready_ms, totals.fetch_ms, totals.launch_ms);
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

void print_speed_up(const std::map<std::string, std::string>& baseline, const Totals& totals,
                    const Options& options) {
  const double cold_ms = number(baseline, "total_ready_ms");
  const int cold_kernels = static_cast<int>(number(baseline, "kernels"));
  const int cold_compiled = static_cast<int>(number(baseline, "tier.compiled"));
  const auto run = baseline.find("run");
  const std::string this_run = options.compile_only ? "compile-only" : "gpu";
  if (run == baseline.end() || run->second != this_run) {
    std::printf("speed-up: not comparable: the baseline is not a %s run\n", this_run.c_str());
    return;
  }
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
  if (cold_compiled != cold_kernels) {
    std::printf("          note: the baseline was not fully cold: %d of %d kernels compiled\n",
                cold_compiled, cold_kernels);
  }
  const auto compiled = totals.tiers.find("compiled");
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

// --list-devices: what a GPU run needs, one line each. Exit 0 when all of
// it is here, else 1 with the reason on stderr.
int list_devices() {
  int status = 0;
  auto driver = kcache_demo::CudaDriver::load();
  if (!driver) {
    std::fprintf(stderr, "kcache_cuda_demo: %s\n", driver.status().message().c_str());
    status = 1;
  } else {
    std::printf("%s\n", (*driver)->version().c_str());
    auto devices = (*driver)->list_devices();
    if (!devices) {
      std::fprintf(stderr, "kcache_cuda_demo: %s\n", devices.status().message().c_str());
      status = 1;
    } else if (devices->empty()) {
      std::fprintf(stderr, "kcache_cuda_demo: the CUDA driver sees no device\n");
      status = 1;
    }
    for (const auto& line : devices.is_ok() ? *devices : std::vector<std::string>{}) {
      std::printf("%s\n", line.c_str());
    }
  }
  kcache::CompilerConfig config;
  config.backend = "nvrtc";
  auto compiler = kcache::make_compiler(config);
  if (!compiler) {
    std::fprintf(stderr, "kcache_cuda_demo: no NVRTC: %s\n", compiler.status().message().c_str());
    status = 1;
  } else {
    std::printf("compiler: %s\n", (*compiler)->identity().version.c_str());
  }
  return status;
}

int run_demo(const Options& options) {
  auto made = kcache_demo::make_cuda_kernel_library();
  if (!made) {
    std::fprintf(stderr, "kcache_cuda_demo: %s\n", made.status().to_string().c_str());
    return 1;
  }
  std::vector<CudaKernelSpec> library = std::move(*made);
  if (options.quick) library = kcache_demo::cuda_quick_subset(std::move(library));
  if (options.list) {
    for (const auto& spec : library) {
      std::printf("%-8s %-26s %-24s %s\n", spec.family.c_str(), spec.name.c_str(),
                  spec.entry.c_str(), spec.options.c_str());
    }
    return 0;
  }
  if (options.print_source) {
    for (const auto& spec : library) {
      if (spec.name != *options.print_source) continue;
      std::printf("// kernel: %s\n%s", spec.entry.c_str(), spec.source.c_str());
      return 0;
    }
    std::fprintf(stderr, "kcache_cuda_demo: no kernel named '%s' (see --list)\n",
                 options.print_source->c_str());
    return 1;
  }

  std::optional<std::map<std::string, std::string>> baseline;
  if (options.baseline) {
    baseline = read_report(*options.baseline);
    if (!baseline) {
      std::fprintf(stderr, "kcache_cuda_demo: cannot read the baseline report %s\n",
                   options.baseline->c_str());
      return 1;
    }
  }

  const CudaJitCacheGuard jit_cache;  // before the first CUDA or NVRTC call
  if (options.list_devices) return list_devices();

  std::optional<kcache::Target> compile_target;
  if (options.compile_only) {
    auto parsed = kcache::Target::parse(options.target.value_or("sm_90"));
    if (!parsed) {
      std::fprintf(stderr, "kcache_cuda_demo: --target: %s\n", parsed.status().message().c_str());
      return 2;
    }
    compile_target = *parsed;
  }

  kcache::CacheOptions cache_options;
  cache_options.cache_dir = options.cache_dir;
  auto cache = kcache::Cache::open(cache_options);
  if (!cache) {
    std::fprintf(stderr, "kcache_cuda_demo: cannot open the cache: %s\n",
                 cache.status().to_string().c_str());
    return 1;
  }
  kcache::CompilerConfig compiler_config;
  compiler_config.backend = "nvrtc";
  auto compiler = kcache::make_compiler(compiler_config);
  if (!compiler) {
    std::fprintf(stderr, "kcache_cuda_demo: no NVRTC: %s\n", compiler.status().message().c_str());
    return 1;
  }

  // The GPU: the driver for buffers and launches, kcache's loader for
  // modules. current_target() makes device 0's primary context current;
  // done here, the context's creation is not charged to the first kernel.
  std::unique_ptr<kcache_demo::CudaDriver> driver;
  std::unique_ptr<kcache::cuda::ModuleLoader> loader;
  std::string target_text;
  std::string device_text;
  if (compile_target) {
    target_text = compile_target->to_string();
    device_text = "none (--compile-only: nothing is loaded or run)";
  } else {
    auto loaded_driver = kcache_demo::CudaDriver::load();
    if (!loaded_driver) {
      std::fprintf(stderr,
                   "kcache_cuda_demo: %s\n  (--compile-only compiles the kernels without a GPU)\n",
                   loaded_driver.status().message().c_str());
      return 1;
    }
    driver = std::move(*loaded_driver);
    auto created = kcache::cuda::ModuleLoader::create(**cache, **compiler);
    if (!created) {
      std::fprintf(stderr, "kcache_cuda_demo: no CUDA loader: %s\n",
                   created.status().message().c_str());
      return 1;
    }
    loader = std::move(*created);
    auto target = loader->current_target();
    if (!target) {
      std::fprintf(stderr, "kcache_cuda_demo: no CUDA device: %s\n",
                   target.status().message().c_str());
      return 1;
    }
    target_text = target->to_string();
    auto device = driver->current_device();
    device_text =
        (device ? *device : "(" + device.status().message() + ")") + " - " + driver->version();
  }

  std::map<std::string, int> families;
  int templates = 0;
  for (const auto& spec : library) {
    ++families[spec.family];
    templates += spec.name_expression ? 1 : 0;
  }
  std::string family_counts;
  for (const auto& [family, count] : families) {
    family_counts += (family_counts.empty() ? "" : ", ") + family + " " + std::to_string(count);
  }
  const kcache::ResolvedConfig& config = (*cache)->config();
  std::printf("kcache CUDA demo: %zu generated CUDA kernels (%s); %d templates named by\n",
              library.size(), family_counts.c_str(), templates);
  std::printf("                  name expressions, %zu extern \"C\"\n",
              library.size() - static_cast<std::size_t>(templates));
  std::printf("  device     %s\n", device_text.c_str());
  std::printf("  target     %s\n", target_text.c_str());
  std::printf("  compiler   %s\n", (*compiler)->identity().version.c_str());
  if (config.enabled) {
    std::printf("  cache      %s\n", config.user_dir.c_str());
  } else {
    std::printf("  cache      DISABLED (%s): every kernel is compiled\n",
                config.disabled_reason.c_str());
  }
  std::printf("  CUDA JIT   %s\n", jit_cache.describe().c_str());
  if (compile_target) {
    std::printf(
        "  ready = fetch (kcache get_or_compile); a result is ok when the CUBIN holds\n"
        "          the kernel's symbol\n\n");
    std::printf("%-26s %-8s %10s %9s  %-34s %s\n", "kernel", "tier", "fetch ms", "bytes", "symbol",
                "result");
  } else {
    std::printf("  ready = fetch + load (ModuleLoader::get_function) + 1st run (to sync)\n\n");
    std::printf("%-26s %-8s %14s %10s %10s  %s\n", "kernel", "tier", "fetch+load ms", "1st run ms",
                "ready ms", "result");
  }
  std::fflush(stdout);  // kcache's own warnings go to stderr; keep them in order

  Totals totals;
  for (const auto& spec : library) {
    const KernelOutcome outcome = compile_target
                                      ? compile_kernel(spec, *compile_target, **cache, **compiler)
                                      : run_kernel(spec, *loader, *driver);
    if (compile_target) {
      std::printf("%-26s %-8s %10.2f %9zu  %-34s %s\n", spec.name.c_str(), outcome.tier.c_str(),
                  outcome.fetch_ms, outcome.bytes, outcome.symbol.c_str(),
                  outcome.ok ? "ok" : "FAIL");
    } else {
      std::printf("%-26s %-8s %14.2f %10.2f %10.2f  %s\n", spec.name.c_str(), outcome.tier.c_str(),
                  outcome.fetch_ms, outcome.launch_ms, outcome.ready_ms,
                  outcome.ok ? "ok" : "FAIL");
    }
    if (!outcome.ok) print_indented(outcome.why);
    std::fflush(stdout);
    ++totals.kernels;
    totals.ok += outcome.ok ? 1 : 0;
    ++totals.tiers[outcome.tier];
    totals.ready_ms += outcome.ready_ms;
    totals.fetch_ms += outcome.fetch_ms;
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
  if (compile_target) {
    std::printf("total ready: %.1f ms (fetch, nothing run)\n", totals.ready_ms);
  } else {
    std::printf("total ready: %.1f ms (fetch+load %.1f + 1st run %.1f)\n", totals.ready_ms,
                totals.fetch_ms, totals.launch_ms);
  }
  const kcache::CacheStats stats = (*cache)->stats();
  std::printf(
      "kcache stats: %llu requests, %llu user hits, %llu compiles, %llu compile failures, "
      "%llu store failures\n",
      static_cast<unsigned long long>(stats.requests),
      static_cast<unsigned long long>(stats.user_hits),
      static_cast<unsigned long long>(stats.compiles),
      static_cast<unsigned long long>(stats.compile_failures),
      static_cast<unsigned long long>(stats.store_failures));

  if (baseline) print_speed_up(*baseline, totals, options);
  if (options.report && !write_report(*options.report, totals, options, target_text)) {
    std::fprintf(stderr, "kcache_cuda_demo: cannot write the report %s\n", options.report->c_str());
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
