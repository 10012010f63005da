// The kcache subcommands. Each registers its options on the app and returns
// the function that runs it; a run returns the process exit status:
// 0 success, 1 a failure that was reported on stderr, 2 a usage error.
#pragma once

#include <kcache/package.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kcache {
class Cache;
struct EntryInfo;
}  // namespace kcache

namespace kcache::tool {

using Runner = std::function<int()>;

// The check of an option that names a file or folder: an empty value
// (what "$KEY" gives with KEY unset) is a usage error, never taken as the
// option left out (`--sign ""` would write an unsigned package).
inline CLI::Validator names_a_path() {
  return CLI::Validator(
      [](std::string& value) { return value.empty() ? std::string("is empty") : std::string(); },
      "", "a path");
}

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

// The cache as the settings say (Cache::open); nullptr after saying why.
std::unique_ptr<Cache> open_cache();
// The one user entry whose key starts with `prefix` (4 to 32 hex digits),
// in database `db` when it is not empty (one key can be in several: an
// arch's and a device's): 0 with it in `found`, or the exit status after
// saying why not (none, several, not a key).
int find_entry(Cache& cache, const std::string& prefix, const std::string& db, EntryInfo& found);

// The database a package belongs to, its metadata "db" (the target it was
// packed for: `sm_90_132`, or `sm_90` for any sm_90); empty when it names
// none (package_report.cpp).
std::string db_of(const PackageInfo& info);

// kcache info PKG... and kcache verify PKG... (package_report.cpp).
int run_package_info(bool json, const std::vector<std::string>& packages);
int run_verify_packages(bool json, const std::vector<std::string>& packages,
                        const std::vector<std::string>& trusted_keys);
// The .kdb files in `folder` (kcache info): each with its kernels and
// whether it applies to this machine, or why not; printed, or added to
// `out` with `json`. Returns why the folder lists none when it is the
// reason (SystemFolder::problem), else "".
std::string report_installed_packages(const std::string& folder, bool json, nlohmann::json* out);

// The command line this process was started with (argv), for kcache pack
// to start its workers with.
const std::vector<std::string>& tool_arguments();

// "812.0 MiB": bytes in binary units, one decimal.
std::string human_bytes(std::uint64_t bytes);

// Prints "kcache: <text>" on stderr and returns 1.
int report_failure(const std::string& text);

// "<path>: <message>", unless the message names the path already
// ("cannot open <path>: ...").
std::string about(const std::string& path, const std::string& message);

// Checks the private key a --sign or --key option names (before anything
// is compiled or written): 0 when it can sign; else says why, prefixed by
// `option`, and returns 2 for a key file that is missing or not a usable
// key (a usage error), 1 when signing cannot be done here (no libsodium).
int check_key_option(const std::string& option, const std::string& key_path);

}  // namespace kcache::tool
