// kcache export: user-cache databases written as read-only packages
// (.kdb) for the system tier.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/option_checks.h"
#include "support/user_cache.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_export(bool json, std::vector<std::string> dbs, const std::string& output) {
  auto cache = open_cache();
  if (!cache) return 1;
  if (dbs.empty()) {
    auto entries = CacheAdmin(*cache).list();
    if (!entries) return report_failure(entries.status().message());
    for (const auto& e : *entries) {
      if (std::find(dbs.begin(), dbs.end(), e.db) == dbs.end()) dbs.push_back(e.db);
    }
    if (dbs.empty()) return report_failure("the user cache is empty; nothing to export");
  }
  const bool to_dir = std::filesystem::is_directory(output) || dbs.size() > 1;
  if (to_dir && !std::filesystem::is_directory(output)) {
    return report_failure("--output " + output + " must be an existing folder to export " +
                          std::to_string(dbs.size()) + " databases");
  }
  nlohmann::json written = nlohmann::json::array();
  for (const auto& db : dbs) {
    // Joined as paths: "out/" gives out/<db>.kdb, not out//<db>.kdb.
    std::string path = to_dir ? (std::filesystem::path(output) / (db + ".kdb")).string() : output;
    // export_db renames its file over `path`: never over a link, FIFO or device.
    if (Status s = check_output_path(path, "--output " + path); !s.is_ok()) {
      return report_failure("export of " + db + ": " + s.message());
    }
    auto count = CacheAdmin(*cache).export_db(db, path);
    if (!count) return report_failure("export of " + db + ": " + count.status().message());
    written.push_back({{"db", db}, {"path", path}, {"entries", *count}});
    if (!json) {
      std::cout << "wrote " << counted(*count, "entry", "entries") << " of " << db << " to " << path
                << "\n";
    }
  }
  if (json) std::cout << json_text(written, 2) << "\n";
  return 0;
}

}  // namespace

Runner add_export_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto dbs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write user-cache databases as read-only .kdb files for the system tier");
  cmd->add_option("--db", *dbs, "Database to export (default: all); repeatable");
  cmd->add_option("--output,-o", *output, "The .kdb file, or a folder for <db>.kdb files")
      ->required()
      ->check(names_a_path());
  cmd->add_flag("--json", *json, "Print JSON");
  return [json, dbs, output] { return run_export(*json, *dbs, *output); };
}

}  // namespace kcache::tool
