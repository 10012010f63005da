// kcache compile: fetch one kernel through the full cache path.
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "commands.h"
#include "named_files.h"

namespace kcache::tool {
namespace {

struct CompileArgs {
  std::string backend;
  std::string source;
  std::vector<std::string> kernels;
  std::string options;
  std::string target;
  std::string output;
  std::string command;
  std::string compiler_id;
  std::vector<std::string> include_dirs;
  std::vector<std::string> headers;  // NAME=FILE
  std::string nvrtc_library;
  std::string hip_library;
  std::vector<std::string> harmless_options;
  int platform = -1;
  int device = 0;
  double timeout_seconds = 600;
  bool json = false;
};

int run_compile(const CompileArgs& args) {
  // Before the compile: a refused --output must not cost one.
  if (!args.output.empty()) {
    if (Status s = check_output_path(args.output, "--output " + args.output); !s.is_ok()) {
      return report_failure(s.message());
    }
  }
  auto source = read_input_file(args.source, "--source " + args.source);
  if (!source) return report_failure(source.status().message());
  if (source->empty()) return report_failure("--source " + args.source + " is empty");
  KernelRequest request;
  request.source = std::move(*source);
  request.kernel_names = args.kernels;
  request.options = args.options;
  request.include_dirs = args.include_dirs;
  for (const auto& spec : args.headers) {
    std::size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "kcache: --header wants NAME=FILE, got '" << spec << "'\n";
      return 2;
    }
    auto content = read_input_file(spec.substr(eq + 1), "header file " + spec.substr(eq + 1));
    if (!content) return report_failure(content.status().message());
    request.headers.push_back({spec.substr(0, eq), std::move(*content)});
  }
  if (!args.target.empty()) {
    auto target = Target::parse(args.target);
    if (!target) {
      std::cerr << "kcache: --target: " << target.status().message() << "\n";
      return 2;
    }
    request.target = *target;
  }

  CompilerConfig config;
  config.backend = args.backend;
  config.command = args.command;
  config.compiler_id = args.compiler_id;
  config.command_input_name = std::filesystem::path(args.source).filename().string();
  config.nvrtc_library = args.nvrtc_library;
  config.hip_library = args.hip_library;
  config.harmless_options = args.harmless_options;
  config.opencl_platform = args.platform;
  config.opencl_device = args.device;
  // 0: no limit; otherwise at least 1 ms (a tiny value must not round to
  // "no limit") and at most about 31 years.
  config.timeout = args.timeout_seconds == 0
                       ? std::chrono::milliseconds(0)
                       : std::chrono::milliseconds(
                             std::llround(std::clamp(args.timeout_seconds, 0.001, 1e9) * 1000));

  auto cache = Cache::open();
  if (!cache) return report_failure(cache.status().message());
  auto compiler = make_compiler(config);
  if (!compiler) {
    report_failure(compiler.status().message());
    return compiler.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  const auto start = std::chrono::steady_clock::now();
  auto kernel = (*cache)->get_or_compile(request, **compiler);
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!kernel) {
    const Status& status = kernel.status();
    std::cerr << "kcache: "
              << (status.code() == StatusCode::kCompileError ? "compile failed: " : "")
              << (status.code() == StatusCode::kTimeout ? "compile timed out: " : "")
              << status.message()
              << (status.code() == StatusCode::kTimeout ? "; --timeout sets the limit" : "")
              << "\n";
    if (!status.details().empty())
      std::cerr << status.details() << (status.details().ends_with('\n') ? "" : "\n");
    return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (!args.output.empty()) {
    if (Status s = write_output_file(args.output, "--output " + args.output, kernel->binary());
        !s.is_ok()) {
      return report_failure(s.message());
    }
  }

  if (args.json) {
    nlohmann::json out = {
        {"key", kernel->key.hex()},
        {"tier", tier_name(kernel->tier)},
        {"target", kernel->target.to_string()},
        {"db", kernel->db},
        {"bytes", kernel->binary().size()},
        {"elapsed_ms", elapsed_ms},
        {"backend", args.backend},
        {"cache_enabled", (*cache)->config().enabled},
    };
    if (!args.output.empty()) out["output"] = args.output;
    nlohmann::json metadata = nlohmann::json::object();
    for (const auto& [name, value] : kernel->metadata_fields) {
      if (!metadata.contains(name)) {
        metadata[name] = value;
      } else {  // a repeated field (one "lowered" per kernel) becomes a list
        if (!metadata[name].is_array()) metadata[name] = nlohmann::json::array({metadata[name]});
        metadata[name].push_back(value);
      }
    }
    out["metadata"] = metadata;
    if (!kernel->compile_log.empty()) out["compile_log"] = kernel->compile_log;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << std::left << std::setw(9) << tier_name(kernel->tier) << kernel->db << "  "
              << kernel->binary().size() << " bytes  " << std::fixed << std::setprecision(2)
              << elapsed_ms << " ms  key " << kernel->key.hex().substr(0, 16)
              << (args.output.empty() ? "" : "  -> " + args.output) << "\n";
  }
  return 0;
}

}  // namespace

Runner add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Fetch one kernel through the cache, compiling it on a miss");
  cmd->add_option("--backend", args->backend, "Compiler backend")
      ->required()
      ->check(CLI::IsMember(compiler_backends()));
  cmd->add_option("--source", args->source, "Kernel source file")->required();
  cmd->add_option("--kernel", args->kernels, "Kernel (entry point) name; repeatable");
  cmd->add_option("--options", args->options, "Compiler options, one string");
  cmd->add_option("--target", args->target,
                  "Target, e.g. sm_90, gfx906_60, gfx90a:xnack-; OpenCL defaults to its device");
  cmd->add_option("--output", args->output, "Write the binary to this file");
  cmd->add_option("--command", args->command,
                  "command backend: compiler command line with {in} and {out}");
  cmd->add_option(
      "--compiler-id", args->compiler_id,
      "command backend: identity of the compiler (default: its executable's and the command "
      "line's files, stamped)");
  cmd->add_option("--include-dir,-I", args->include_dirs, "Header search folder; repeatable");
  cmd->add_option("--header", args->headers, "In-memory header NAME=FILE; repeatable");
  cmd->add_option("--nvrtc-library", args->nvrtc_library,
                  "nvrtc: libnvrtc to load (default: search, see KCACHE_NVRTC_LIBRARY)");
  cmd->add_option("--harmless-option", args->harmless_options,
                  "An option name that reads no file (e.g. --my-flag): an option kcache does not "
                  "know and that may name a file otherwise makes the request uncached; repeatable");
  cmd->add_option("--hip-library", args->hip_library,
                  "hip: libamdhip64 (hipRTC) to load (default: search, see KCACHE_HIP_LIBRARY)");
  cmd->add_option("--platform", args->platform,
                  "opencl: platform index (default: first with a device)");
  cmd->add_option("--device", args->device, "opencl: device index on the platform");
  cmd->add_option("--timeout", args->timeout_seconds,
                  "command and hip backends: stop a compile still running after this many "
                  "seconds (decimals allowed; 0: no limit); it fails and is not cached")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double seconds = 0;
            if (CLI::detail::lexical_cast(text, seconds) && seconds >= 0 &&
                std::isfinite(seconds)) {
              return {};
            }
            return "wants a number of seconds (0: no limit), got '" + text + "'";
          },
          "SECONDS"));
  cmd->add_flag("--json", args->json, "Print one JSON object");
  return [args] { return run_compile(*args); };
}

}  // namespace kcache::tool
