#include "support/request_flags.h"

#include <filesystem>
#include <iostream>

#include "support/failure_report.h"
#include "support/user_paths.h"

namespace kcache::tool {

void add_request_flags(CLI::App* cmd, RequestFlags& flags, bool required) {
  auto* backend = cmd->add_option("--backend", flags.backend, "Compiler backend")
                      ->check(CLI::IsMember(compiler_backends()));
  auto* source = cmd->add_option("--source", flags.source, "Kernel source file");
  if (required) {
    backend->required();
    source->required();
  }
  cmd->add_option("--kernel", flags.kernels, "Kernel (entry point) name; repeatable");
  cmd->add_option("--options", flags.options, "Compiler options, one string");
  cmd->add_option("--target", flags.target,
                  "Target, e.g. sm_90, gfx906_60, gfx90a:xnack-; OpenCL defaults to its device");
  cmd->add_option("--include-dir,-I", flags.include_dirs, "Header search folder; repeatable");
  cmd->add_option("--header", flags.headers, "In-memory header NAME=FILE; repeatable");
  add_compiler_flags(cmd, flags.compiler, "");
}

int make_request(const RequestFlags& flags, KernelRequest& request,
                 std::unique_ptr<Compiler>& compiler) {
  auto source = read_input_file(flags.source, "--source " + flags.source);
  if (!source) return report_failure(source.status().message());
  if (source->empty()) return report_failure("--source " + flags.source + " is empty");
  request.source = std::move(*source);
  request.kernel_names = flags.kernels;
  request.options = flags.options;
  request.include_dirs = flags.include_dirs;
  for (const auto& spec : flags.headers) {
    std::size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "kcache: --header wants NAME=FILE, got '" << spec << "'\n";
      return 2;
    }
    auto content = read_input_file(spec.substr(eq + 1), "header file " + spec.substr(eq + 1));
    if (!content) return report_failure(content.status().message());
    request.headers.push_back({spec.substr(0, eq), std::move(*content)});
  }
  if (!flags.target.empty()) {
    auto target = Target::parse(flags.target);
    if (!target) {
      std::cerr << "kcache: --target: " << target.status().message() << "\n";
      return 2;
    }
    request.target = *target;
  }
  CompilerConfig config = config_of(flags.compiler);
  config.backend = flags.backend;
  config.command_input_name = std::filesystem::path(flags.source).filename().string();
  auto made = make_compiler(config);
  if (!made) {
    report_failure(made.status().message());
    return made.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  compiler = std::move(*made);
  return 0;
}

}  // namespace kcache::tool
