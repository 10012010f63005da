// kcache show: one entry of the user cache whole: what it is, its
// metadata and its key material.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

int run_show(const std::string& key, const std::string& db, bool json) {
  auto cache = open_cache();
  if (!cache) return 1;
  EntryInfo info;
  if (int status = find_entry(*cache, key, db, info); status != 0) return status;
  auto entry = CacheAdmin(*cache).read_entry(info.db, info.key);
  if (!entry) return report_failure(entry.status().message());
  if (!*entry) return report_failure("entry " + info.key.hex() + " went while it was read");
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  if (json) {
    nlohmann::json out = entry_json(info);
    out["material"] = (*entry)->material;
    nlohmann::json metadata = nlohmann::json::array();
    for (const auto& [field, value] : (*entry)->metadata) metadata.push_back({field, value});
    out["metadata"] = metadata;
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  const auto row = [](const std::string& label, const std::string& value) {
    std::cout << bold(label) << std::string(12 - label.size(), ' ') << value << "\n";
  };
  row("key", info.key.hex());
  row("database", info.db);
  row("backend", info.backend);
  row("kind", info.failure ? "a remembered compile error (its log is the payload)" : "binary");
  row("target", info.target.empty() ? "-" : info.target);
  if (!info.client_namespace.empty()) {
    row("namespace", shown(info.client_namespace));
    row("client key", shown(info.client_key));
  } else {
    row("kernels", info.kernels.empty() ? "-" : info.kernels);
  }
  row("size", human_bytes(info.bytes) + " (" + human_bytes(info.stored_bytes) + " stored)");
  row("created", utc_time(info.created_unix) + " (" + human_age(now - info.created_unix) + " ago)");
  row("last used", info.last_used_unix == 0 ? "-"
                                            : utc_time(info.last_used_unix) + " (" +
                                                  human_age(now - info.last_used_unix) + " ago)");
  if (info.compile_micros > 0) {
    std::ostringstream ms;
    ms << std::fixed << std::setprecision(1) << info.compile_micros / 1000.0 << " ms";
    row("compiled in", ms.str());
  }
  for (const auto& [field, value] : (*entry)->metadata) row("metadata", field + " = " + value);
  std::cout << bold("key material") << "\n";
  std::istringstream material((*entry)->material);
  for (std::string line; std::getline(material, line);) {
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    std::cout << "  " << dim(shown(line)) << "\n";
  }
  return 0;
}

}  // namespace

Runner add_show_command(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("show", "Show one entry whole: what it is, its key material");
  cmd->add_option("key", *key, "The key, or its start (as `kcache list` shows it)")->required();
  cmd->add_option("--db", *db, "The database, when the key is in several (e.g. gfx906_60)");
  cmd->add_flag("--json", *json, "Print JSON");
  return [key, db, json] { return run_show(*key, *db, *json); };
}

}  // namespace kcache::tool
