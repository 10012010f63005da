// kcache compile: fetch one kernel through the full cache path.
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "commands.h"
#include "compiler_flags.h"
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
  std::vector<std::string> include_dirs;
  std::vector<std::string> headers;  // NAME=FILE
  CompilerFlags compiler;
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

  CompilerConfig config = config_of(args.compiler);
  config.backend = args.backend;
  config.command_input_name = std::filesystem::path(args.source).filename().string();

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
  cmd->add_option("--include-dir,-I", args->include_dirs, "Header search folder; repeatable");
  cmd->add_option("--header", args->headers, "In-memory header NAME=FILE; repeatable");
  add_compiler_flags(cmd, args->compiler, "");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  return [args] { return run_compile(*args); };
}

}  // namespace kcache::tool
