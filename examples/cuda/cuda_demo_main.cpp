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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_driver.h"
#include "cuda_kernel_library.h"
#include "cuda_runner.h"
#include "demo_common.h"

namespace {

using kcache_demo::Clock;
using kcache_demo::CudaKernelSpec;
using kcache_demo::ms_between;

constexpr char kProgram[] = "kcache_cuda_demo";

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

struct Options : kcache_demo::DemoOptions {
  bool compile_only = false;
  std::optional<std::string> target;
};

// Returns nullopt (after printing why) on a usage error.
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  std::vector<kcache_demo::Flag> flags = kcache_demo::demo_flags(options);
  flags.push_back(kcache_demo::Flag::toggle("--compile-only", options.compile_only));
  flags.push_back(kcache_demo::Flag::with_value("--target", options.target));
  if (!kcache_demo::parse_flags(kProgram, argc, argv, flags)) return std::nullopt;
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
  CudaJitCacheGuard() : set_here_(kcache_demo::set_env_default("CUDA_CACHE_DISABLE", "1")) {}
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
  const std::string format = fetched->metadata(kcache::kFormatField).value_or("?");
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
  if (options.quick) library = kcache_demo::quick_subset(std::move(library));
  if (options.list) {
    for (const auto& spec : library) {
      std::printf("%-8s %-26s %-24s %s\n", spec.family.c_str(), spec.name.c_str(),
                  spec.entry.c_str(), spec.options.c_str());
    }
    return 0;
  }
  if (options.print_source) {
    const CudaKernelSpec* spec = kcache_demo::find_kernel(kProgram, library, *options.print_source);
    if (spec == nullptr) return 1;
    std::printf("// kernel: %s\n%s", spec->entry.c_str(), spec->source.c_str());
    return 0;
  }

  std::optional<kcache_demo::Report> baseline;
  if (options.baseline) {
    baseline = kcache_demo::read_baseline(kProgram, *options.baseline);
    if (!baseline) return 1;
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

  const std::unique_ptr<kcache::Cache> cache = kcache_demo::open_cache(kProgram, options.cache_dir);
  if (!cache) return 1;
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
    auto created = kcache::cuda::ModuleLoader::create(*cache, **compiler);
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

  const int templates = static_cast<int>(
      std::count_if(library.begin(), library.end(),
                    [](const CudaKernelSpec& spec) { return spec.name_expression; }));
  std::printf("kcache CUDA demo: %zu generated CUDA kernels (%s); %d templates named by\n",
              library.size(), kcache_demo::count_families(library).c_str(), templates);
  std::printf("                  name expressions, %zu extern \"C\"\n",
              library.size() - static_cast<std::size_t>(templates));
  std::printf("  device     %s\n", device_text.c_str());
  std::printf("  target     %s\n", target_text.c_str());
  std::printf("  compiler   %s\n", (*compiler)->identity().version.c_str());
  kcache_demo::print_cache_line(cache->config());
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

  kcache_demo::Totals totals;
  double fetch_ms = 0;  // the stages of totals.ready_ms
  double launch_ms = 0;
  for (const auto& spec : library) {
    const KernelOutcome outcome = compile_target
                                      ? compile_kernel(spec, *compile_target, *cache, **compiler)
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
    if (!outcome.ok) kcache_demo::print_indented(outcome.why);
    std::fflush(stdout);
    totals.add(outcome.tier, outcome.ok, outcome.ready_ms);
    fetch_ms += outcome.fetch_ms;
    launch_ms += outcome.launch_ms;
  }

  kcache_demo::print_totals(totals);
  if (compile_target) {
    std::printf("total ready: %.1f ms (fetch, nothing run)\n", totals.ready_ms);
  } else {
    std::printf("total ready: %.1f ms (fetch+load %.1f + 1st run %.1f)\n", totals.ready_ms,
                fetch_ms, launch_ms);
  }
  kcache_demo::print_cache_stats(cache->stats());

  const std::string run_kind = options.compile_only ? "compile-only" : "gpu";
  if (baseline) {
    // The shared checks compare kernel counts; a GPU run and a compile-only
    // run of as many kernels time different things.
    const auto run = baseline->find("run");
    if (run == baseline->end() || run->second != run_kind) {
      std::printf("speed-up: not comparable: the baseline is not a %s run\n", run_kind.c_str());
    } else {
      kcache_demo::print_speed_up(*baseline, totals);
    }
  }
  if (options.report &&
      !kcache_demo::write_report(
          kProgram, *options.report,
          {{"mode", options.quick ? "quick" : "full"}, {"run", run_kind}, {"target", target_text}},
          totals,
          {{"total_ready_ms", totals.ready_ms},
           {"total_fetch_load_ms", fetch_ms},
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
