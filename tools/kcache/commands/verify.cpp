// kcache verify: every entry of the user cache and every system package
// checked (--repair quarantines bad entries and fixes the index); or,
// given packages, each checked whole: every entry, the signature, the
// trust, and whether the system tier would use it.
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/options.h>
#include <kcache/package.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/option_checks.h"
#include "support/package_fields.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

int run_verify(bool json, bool repair) {
  auto cache = open_cache();
  if (!cache) return 1;
  auto report = CacheAdmin(*cache).verify({.repair = repair});
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

// The database the package at `path` is found as in the system folder
// `described` lists (by its name there); empty when it does not lie there.
std::string found_as(const std::string& path, const SystemFolder& described) {
  const std::filesystem::path file(path);
  std::filesystem::path parent = file.parent_path();
  if (parent.empty()) parent = ".";
  for (const SystemFolderItem& item : described.items) {
    const std::filesystem::path listed(item.path);
    std::error_code error;
    if (listed.filename() == file.filename() &&
        std::filesystem::equivalent(listed.parent_path(), parent, error)) {
      return item.db;
    }
  }
  return {};
}

int run_verify_packages(bool json, const std::vector<std::string>& packages,
                        const std::vector<std::string>& trusted_keys) {
  auto keys = trusted_keys_to_check(trusted_keys);
  if (!keys) return 1;  // a key file that cannot be used, as an unreadable input
  // Where a package lies in the system folder, its name there is its
  // database (install names it).
  const std::string system_folder = resolve_config(CacheOptions{}).system_db_path;
  const SystemFolder installed =
      system_folder.empty() ? SystemFolder{} : describe_system_folder(system_folder);
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    auto info = read_package_info(path, /*check_entries=*/true, *keys);
    std::vector<std::string> problems;
    if (!info) {
      problems.push_back(info.status().message());
    } else {
      if (info->bad_entries > 0) {
        problems.push_back(failing_entries(info->bad_entries, info->kernels));
        // Which (import and merge send the user here to learn it).
        constexpr std::size_t kNamed = 20;
        const auto& bad = info->bad_entry_problems;
        for (std::size_t i = 0; i < bad.size() && i < kNamed; ++i) {
          problems.push_back("entry " + bad[i].first + ": " + bad[i].second);
        }
        if (bad.size() > kNamed) {
          problems.push_back(std::to_string(bad.size() - kNamed) + " more entries fail");
        }
      }
      if (!info->signature_problem.empty()) problems.push_back(info->signature_problem);
      // A broken signature is the refusal too: said once, and the key it
      // names is not confirmed (whether that key is trusted is moot).
      if (!info->refusal.empty() && info->signature_problem.empty()) {
        problems.push_back("the system tier would not use it: " + info->refusal);
      }
      // Another key or entry format: no kcache of this one uses it. Its
      // name is its own only in the system folder (install names it).
      std::string db = found_as(path, installed);
      if (db.empty()) db = db_of(*info);
      if (std::string unfit = package_unfit_reason(*info, db, CompilerIdentity{}); !unfit.empty()) {
        problems.push_back("the system tier would not use it: " + unfit);
      }
    }
    if (!problems.empty()) status = 1;
    if (json) {
      nlohmann::json one = info ? package_json(*info) : nlohmann::json{{"path", path}};
      // Unknown (null) when the package could not be read at all.
      one["bad_entries"] = info ? nlohmann::json(info->bad_entries) : nlohmann::json(nullptr);
      one["problems"] = problems;
      one["ok"] = problems.empty();
      out.push_back(std::move(one));
      continue;
    }
    if (problems.empty()) {
      std::cout << shown(path) << ": ok, " << counted(info->kernels, "kernel")
                << (info->signer.empty() ? ", not signed" : ", signed by key " + info->signer)
                << (keys->empty() ? "" : ", trusted") << "\n";
    }
    for (const auto& problem : problems) {
      std::cout << shown(path) << ": problem: " << shown(problem) << "\n";
    }
  }
  if (json) std::cout << json_text(out, 2) << "\n";
  return status;
}

}  // namespace

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

}  // namespace kcache::tool
