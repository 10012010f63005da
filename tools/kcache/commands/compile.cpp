// kcache compile: fetch one kernel through the full cache path.
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/json_text.h"
#include "support/option_checks.h"
#include "support/request_flags.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

struct CompileArgs {
  RequestFlags request;
  std::string output;
  bool json = false;
};

int run_compile(const CompileArgs& args) {
  // Before the compile: a refused --output must not cost one.
  if (!args.output.empty()) {
    if (Status s = check_output_path(args.output, "--output " + args.output); !s.is_ok()) {
      return report_failure(s.message());
    }
  }
  KernelRequest request;
  std::unique_ptr<Compiler> compiler;
  if (int status = make_request(args.request, request, compiler); status != 0) return status;
  auto cache = Cache::open();
  if (!cache) return report_failure(cache.status().message());

  const auto start = std::chrono::steady_clock::now();
  auto kernel = (*cache)->get_or_compile(request, *compiler);
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
        {"backend", args.request.backend},
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
    std::cout << json_text(out) << "\n";
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
  add_request_flags(cmd, args->request, /*required=*/true);
  cmd->add_option("--output", args->output, "Write the binary to this file")->check(names_a_path());
  cmd->add_flag("--json", args->json, "Print one JSON object");
  return [args] { return run_compile(*args); };
}

}  // namespace kcache::tool
