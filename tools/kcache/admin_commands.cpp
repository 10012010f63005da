// kcache info, clear, verify, export: looking after the cache (what
// packages say of themselves: package_report.cpp).
#include <kcache/cache.h>
#include <kcache/version.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "commands/commands.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_info(bool json) {
  auto cache = open_cache();
  if (!cache) return 1;
  const ResolvedConfig& config = cache->config();
  if (json) {
    nlohmann::json settings = nlohmann::json::array();
    for (const auto& s : config.settings) {
      settings.push_back({{"name", s.name},
                          {"value", s.value},
                          {"origin", s.origin},
                          {"env", s.env_var},
                          {"doc", s.doc}});
    }
    nlohmann::json out = {{"version", KCACHE_VERSION_STRING},
                          {"enabled", config.enabled},
                          {"disabled_reason", config.disabled_reason},
                          {"user_dir", config.user_dir},
                          {"system_db_path", config.system_db_path},
                          {"backends", compiler_backends()},
                          {"settings", settings},
                          {"warnings", config.warnings}};
    nlohmann::json packages = nlohmann::json::array();
    if (config.enabled) {
      out["system_db_problem"] = report_installed_packages(config.system_db_path, true, &packages);
    }
    out["packages"] = packages;
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  std::cout << "kcache " << KCACHE_VERSION_STRING << "\n";
  std::cout << "cache:       "
            << (config.enabled ? "enabled" : "disabled (" + config.disabled_reason + ")") << "\n";
  if (config.enabled) {
    std::cout << "user dir:    " << (config.user_dir.empty() ? "(none)" : config.user_dir) << "\n";
    std::cout << "system dir:  " << config.system_db_path << "\n";
  }
  std::string backends;
  for (const auto& b : compiler_backends()) backends += (backends.empty() ? "" : ", ") + b;
  std::cout << "backends:    " << backends << "\n\nsettings:\n";
  for (const auto& s : config.settings) {
    std::cout << "  " << std::left << std::setw(18) << s.name << " = " << std::setw(34)
              << ("'" + s.value + "'") << " (" << s.origin << ")\n";
  }
  if (config.enabled) report_installed_packages(config.system_db_path, false, nullptr);
  return 0;
}

int run_clear(bool json, bool failures_only) {
  auto cache = open_cache();
  if (!cache) return 1;
  auto removed = failures_only ? cache->clear_failures() : cache->clear();
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

int run_verify(bool json, bool repair) {
  auto cache = open_cache();
  if (!cache) return 1;
  auto report = cache->verify(repair);
  if (!report) return report_failure(report.status().message());
  std::size_t unrepaired = 0;
  for (const auto& p : report->problems) unrepaired += p.repaired ? 0 : 1;
  if (json) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : report->problems) {
      problems.push_back({{"path", p.path}, {"problem", p.problem}, {"repaired", p.repaired}});
    }
    std::cout << json_text(nlohmann::json{{"entries_checked", report->entries_checked},
                                          {"entries_ok", report->entries_ok},
                                          {"databases_checked", report->databases_checked},
                                          {"problems", problems},
                                          {"cannot_repair", report->cannot_repair},
                                          {"ok", unrepaired == 0}},
                           2)
              << "\n";
  } else {
    for (const auto& p : report->problems) {
      std::cout << (p.repaired ? "repaired: " : "problem:  ") << shown(p.path) << ": "
                << shown(p.problem) << "\n";
    }
    std::cout << report->entries_ok << " of "
              << counted(report->entries_checked, "entry", "entries") << " ok in "
              << counted(report->databases_checked, "database");
    // "0 of 0 entries ok" alone read as all well when every package was
    // refused: the problems above are counted too.
    if (unrepaired > 0) std::cout << "; " << counted(unrepaired, "problem") << " (above)";
    // Installed .kdb packages are read-only: repair cannot fix them.
    bool repairable = false;
    for (const auto& p : report->problems) {
      repairable = repairable || (!p.repaired && p.path.find(".kdb") == std::string::npos);
    }
    // Where the cache is read-only, repair cannot run: said, not offered.
    if (repairable && !report->cannot_repair.empty()) {
      std::cout << "; " << shown(report->cannot_repair) << ", so they cannot be repaired";
    } else if (repairable && !repair) {
      std::cout << "; run 'kcache verify --repair' to fix";
    }
    std::cout << "\n";
  }
  return unrepaired == 0 ? 0 : 1;
}

int run_export(bool json, std::vector<std::string> dbs, const std::string& output) {
  auto cache = open_cache();
  if (!cache) return 1;
  if (dbs.empty()) {
    auto entries = cache->list();
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
    auto count = cache->export_db(db, path);
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

std::unique_ptr<Cache> open_cache() {
  auto cache = Cache::open();
  if (!cache) {
    report_failure(cache.status().message());
    return nullptr;
  }
  return std::move(*cache);
}

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << value << " " << units[unit];
  return out.str();
}

Runner add_info_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto packages = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Show the version, every setting and where it came from; or what packages hold");
  cmd->add_option("packages", *packages,
                  "Packages (.kdb) to describe: format, kernels, target, compilers, trust");
  cmd->add_flag("--json", *json, "Print JSON");
  return [json, packages] {
    return packages->empty() ? run_info(*json) : run_package_info(*json, *packages);
  };
}

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

Runner add_verify_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto repair = std::make_shared<bool>(false);
  auto packages = std::make_shared<std::vector<std::string>>();
  auto trusted = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check every user entry and system .kdb, or the packages named; exit 1 if a problem "
      "remains");
  cmd->add_option("packages", *packages,
                  "Packages (.kdb) to check instead: every entry, the signature, the trust");
  cmd->add_option("--trusted", *trusted,
                  "With packages: a public key (.pub, or a folder of them) they must be signed "
                  "with; repeatable (default: KCACHE_TRUSTED_KEYS)")
      ->allow_extra_args(false)  // one each: the packages may follow it
      ->check(names_a_path());
  cmd->add_flag("--json", *json, "Print JSON");
  auto* repair_flag =
      cmd->add_flag("--repair", *repair, "Quarantine bad entries and fix the index");
  repair_flag->excludes(cmd->get_option("packages"));
  return [json, repair, packages, trusted] {
    if (!packages->empty()) return run_verify_packages(*json, *packages, *trusted);
    if (!trusted->empty()) {
      std::cerr << "kcache: --trusted checks the packages named; name them (kcache verify PKG "
                   "--trusted KEY.pub)\n";
      return 2;
    }
    return run_verify(*json, *repair);
  };
}

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
