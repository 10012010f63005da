// kcache clear: every entry of the user cache removed, or with --failures
// only the remembered compile errors.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/json_text.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

int run_clear(bool json, bool failures_only) {
  auto cache = open_cache();
  if (!cache) return 1;
  auto removed = failures_only ? CacheAdmin(*cache).clear_failures() : CacheAdmin(*cache).clear();
  if (!removed) return report_failure(removed.status().message());
  if (json) {
    std::cout << json_text(
                     nlohmann::json{{"removed", *removed}, {"user_dir", cache->config().user_dir}})
              << "\n";
  } else {
    std::cout << "removed " << *removed
              << (failures_only ? " remembered compile errors" : " entries") << " from "
              << cache->config().user_dir << "\n";
  }
  return 0;
}

}  // namespace

Runner add_clear_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto failures = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("clear", "Remove every entry of the user cache (this version)");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->add_flag("--failures", *failures,
                "Only forget remembered compile errors, so they are compiled again");
  return [json, failures] { return run_clear(*json, *failures); };
}

}  // namespace kcache::tool
