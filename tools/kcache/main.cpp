// kcache: the command-line tool over the public kcache API.
#include <kcache/compiler.h>
#include <kcache/version.h>

#include <iostream>
#include <map>

#include "commands/commands.h"
#include "support/failure_report.h"

namespace kcache::tool {

namespace {
std::vector<std::string> arguments;
}  // namespace

const std::vector<std::string>& tool_arguments() { return arguments; }

}  // namespace kcache::tool

int main(int argc, char** argv) {
  using namespace kcache::tool;
  arguments.assign(argv, argv + argc);
  std::string features;
  for (const auto& backend : kcache::compiler_backends()) features += " " + backend;
  CLI::App app{"kcache: a cache of compiled GPU kernel binaries (OpenCL, CUDA, HIP)", "kcache"};
  app.set_version_flag(
      "--version", std::string("kcache ") + KCACHE_VERSION_STRING + " (backends:" + features + ")");
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  for (auto add : {add_compile_command, add_info_command, add_list_command, add_clear_command,
                   add_verify_command, add_export_command, add_pack_command, add_install_command,
                   add_import_command, add_merge_command, add_keygen_command, add_sign_command,
                   add_prune_command, add_stats_command, add_show_command, add_extract_command,
                   add_explain_command, add_gc_command, add_run_command}) {
    std::size_t before = app.get_subcommands({}).size();
    Runner runner = add(app);
    runners[app.get_subcommands({})[before]] = std::move(runner);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A first word that names no command: said as such, with the commands.
    const auto named = app.get_subcommands();
    if (named.empty() && argc > 1 && argv[1][0] != '-') {
      std::string commands;
      for (const CLI::App* sub : app.get_subcommands({})) {
        commands += (commands.empty() ? "" : ", ") + sub->get_name();
      }
      std::cerr << "kcache: unknown command '" << argv[1] << "' (commands: " << commands
                << ")\nRun 'kcache --help' for usage.\n";
      return 2;
    }
    // The command's own help, when the error is within one.
    const std::string command = named.empty() ? "" : " " + named.front()->get_name();
    std::cerr << "kcache: " << e.what() << "\nRun 'kcache" << command << " --help' for usage.\n";
    return 2;
  }
  for (CLI::App* sub : app.get_subcommands()) {
    try {
      return runners.at(sub)();
    } catch (const std::exception& e) {
      return report_failure(std::string("unexpected error: ") + e.what());
    }
  }
  return 2;
}
