// The kcache subcommands, one file each in this folder. Each registers its
// options on the app and returns the function that runs it; a run returns
// the process exit status: 0 success, 1 a failure that was reported on
// stderr, 2 a usage error.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kcache::tool {

using Runner = std::function<int()>;

Runner add_compile_command(CLI::App& app);
Runner add_info_command(CLI::App& app);
Runner add_list_command(CLI::App& app);
Runner add_clear_command(CLI::App& app);
Runner add_verify_command(CLI::App& app);
Runner add_export_command(CLI::App& app);
Runner add_pack_command(CLI::App& app);
Runner add_install_command(CLI::App& app);
Runner add_import_command(CLI::App& app);
Runner add_merge_command(CLI::App& app);
Runner add_keygen_command(CLI::App& app);
Runner add_sign_command(CLI::App& app);
Runner add_prune_command(CLI::App& app);
Runner add_stats_command(CLI::App& app);
Runner add_show_command(CLI::App& app);
Runner add_extract_command(CLI::App& app);
Runner add_explain_command(CLI::App& app);
Runner add_gc_command(CLI::App& app);
Runner add_run_command(CLI::App& app);

// The command line this process was started with (argv, set by main),
// for kcache pack to start its workers with.
const std::vector<std::string>& tool_arguments();

}  // namespace kcache::tool
