// kcache extract: one entry's binary (or a remembered error's log)
// written to a file.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/option_checks.h"
#include "support/user_cache.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_extract(const std::string& key, const std::string& db, const std::string& output,
                bool json) {
  auto cache = open_cache();
  if (!cache) return 1;
  EntryInfo info;
  if (int status = find_entry(*cache, key, db, info); status != 0) return status;
  if (Status s = check_output_path(output, "--output " + output); !s.is_ok()) {
    return report_failure(s.message());
  }
  auto entry = CacheAdmin(*cache).read_entry(info.db, info.key);
  if (!entry) return report_failure(entry.status().message());
  if (!*entry) return report_failure("entry " + info.key.hex() + " went while it was read");
  if (Status s = write_output_file(output, "--output " + output, (*entry)->binary); !s.is_ok()) {
    return report_failure(s.message());
  }
  if (json) {
    std::cout << json_text(nlohmann::json{{"key", info.key.hex()},
                                          {"db", info.db},
                                          {"output", output},
                                          {"bytes", (*entry)->binary.size()},
                                          {"failure", info.failure}},
                           2)
              << "\n";
  } else {
    std::cout << "wrote " << human_bytes((*entry)->binary.size()) << " of "
              << (info.failure ? "compile log of " : "") << info.key.hex().substr(0, 16) << " ("
              << info.db << ") to " << output << "\n";
  }
  return 0;
}

}  // namespace

Runner add_extract_command(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("extract", "Write one entry's binary to a file");
  cmd->add_option("key", *key, "The key, or its start (as `kcache list` shows it)")->required();
  cmd->add_option("--db", *db, "The database, when the key is in several (e.g. gfx906_60)");
  cmd->add_option("--output,-o", *output, "The file to write")->required()->check(names_a_path());
  cmd->add_flag("--json", *json, "Print JSON");
  return [key, db, output, json] { return run_extract(*key, *db, *output, *json); };
}

}  // namespace kcache::tool
