// kcache info: the version, every setting and where it came from, and
// the system folder's packages with whether each applies to this machine;
// or, given packages, what each says of itself (format, target, kernels,
// metadata, signature) and whether the system tier would use it.
#include <kcache/cache.h>
#include <kcache/package.h>
#include <kcache/version.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/machine_fit.h"
#include "support/option_checks.h"
#include "support/package_fields.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

std::string date_of(const std::string& unix_seconds) {
  const auto when = static_cast<std::time_t>(std::strtoll(unix_seconds.c_str(), nullptr, 10));
  char date[32];
  std::tm utc{};
  if (gmtime_r(&when, &utc) == nullptr ||
      std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc) == 0) {
    return unix_seconds;
  }
  return std::string(date) + " (" + unix_seconds + ")";
}

std::string signature_text(const PackageInfo& info) {
  if (info.signer.empty()) return "no";
  if (!info.signature_problem.empty())
    // The key it names is not confirmed: a forger can name any.
    return "BROKEN (it names key " + info.signer + "): " + info.signature_problem;
  // The signature is over the index and each entry's digest: it can hold
  // while entries do not match their digests.
  if (info.entries_not_as_signed > 0) {
    return "by key " + info.signer + " (the signature holds, but " +
           not_as_signed_text(info.entries_not_as_signed, info.kernels) + ")";
  }
  return "by key " + info.signer + " (the signature holds)";
}

// What `kcache info PKG` says of its entries: those never served, and
// those not as signed, which the system tier serves unless keys are set.
std::string entries_text(const PackageInfo& info, bool keys_set) {
  if (info.bad_entries == 0) return "all pass their checks";
  std::string text;
  if (const std::uint64_t damaged = info.bad_entries - info.entries_not_as_signed; damaged > 0) {
    text = failing_entries(damaged, info.kernels) + " (never served)";
  }
  if (info.entries_not_as_signed > 0) {
    text += (text.empty() ? "" : "; ") +
            not_as_signed_text(info.entries_not_as_signed, info.kernels) +
            (keys_set ? " (the system tier refuses the package whole)"
                      : " (served all the same: without trusted keys the system tier checks "
                        "each entry's checksum, not its signed digest)");
  }
  return text;
}

// Whether the system tier would use it, and on what grounds: what it
// checks, and what it does not, when no trusted keys are set.
std::string trusted_text(const PackageInfo& info, bool keys_set) {
  if (!info.refusal.empty()) return "no: " + info.refusal + " (the system tier will not use it)";
  if (keys_set) {
    return "yes: signed by a trusted key (the system tier checks each entry against the "
           "signature)";
  }
  std::string text =
      "yes, by its file's owner and mode alone: no trusted keys are set (KCACHE_TRUSTED_KEYS), "
      "so the system tier ";
  text += info.signer.empty() ? std::string("asks for no signature")
                              : "checks its signature once, not each entry against it";
  if (info.entries_not_as_signed > 0) {
    text += ", and would serve the " + counted(info.entries_not_as_signed, "entry", "entries") +
            " not as signed";
  }
  return text;
}

// Its target as a request names it: "gfx90a:xnack-", or the db and its
// features when they are several.
std::string target_text(const PackageInfo& info) {
  const auto features = features_of(info);
  if (features.empty()) return db_of(info);
  if (features.size() == 1) return db_of(info) + ":" + features[0];
  std::string list;
  for (const auto& one : features) list += (list.empty() ? "" : ", ") + one;
  return db_of(info) + " (features " + list + ")";
}

// The packages in the system `folder` (describe_system_folder): each with
// its kernels and whether it applies to this machine, or why not; printed,
// or added to `out` with `json`. Returns why the folder lists none when it
// is the reason (SystemFolder::problem), else "".
std::string report_installed_packages(const std::string& folder, bool json, nlohmann::json* out) {
  const std::vector<std::string> keys = *trusted_keys_to_check({});
  const SystemFolder described = describe_system_folder(folder, keys);
  const std::string& problem = described.problem;
  if (!json)
    std::cout << "\nsystem packages (" << shown(folder) << ")"
              << (!described.items.empty() ? ":"
                  : problem.empty()        ? ": none"
                                           : ": none (" + problem + ")")
              << "\n";
  for (const SystemFolderItem& item : described.items) {
    // Ruled out by its place alone: not read.
    if (!item.opened) {
      if (json) {
        out->push_back({{"path", item.path},
                        {"db", item.db},
                        {"applies", false},
                        {"why_not", item.why_not_used},
                        {"note", ""},
                        {"checked", true}});
      } else {
        std::cout << "  " << shown(item.name) << ": does not apply: " << shown(item.why_not_used)
                  << "\n";
      }
      continue;
    }
    auto info = read_package_info(item.path, /*check_entries=*/false, keys);
    std::string note;
    const std::string why = !item.used() ? item.why_not_used
                            : info       ? why_not_on_this_machine(*info, item.db, &note)
                                         : info.status().message();
    if (json) {
      nlohmann::json one = info ? package_json(*info) : nlohmann::json{{"path", item.path}};
      one["db"] = item.db;
      one["applies"] = why.empty();
      one["why_not"] = why;
      one["note"] = note;
      one["checked"] = note.empty();  // whether "applies" was found here, not assumed
      out->push_back(std::move(one));
      continue;
    }
    // A note is what could not be checked here: "may apply", not "applies".
    const std::string verdict = !why.empty()   ? "does not apply: " + why
                                : note.empty() ? "applies to this machine"
                                               : "may apply: " + note;
    std::cout << "  " << shown(item.name) << ": "
              << (info ? counted(info->kernels, "kernel") + ", " : "") << shown(verdict) << "\n";
  }
  return problem;
}

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

int run_package_info(bool json, const std::vector<std::string>& packages) {
  auto keys = trusted_keys_to_check({});
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    // Its entries read too: what it says of itself is not all (an entry
    // altered after signing refuses a signed package under trusted keys).
    auto info = read_package_info(path, /*check_entries=*/true, *keys);
    if (!info) {
      status = report_failure(with_path_named(path, info.status().message()));
      // In JSON too: one object for each package named, in their order.
      if (json) out.push_back({{"path", path}, {"error", info.status().message()}});
      continue;
    }
    // read_package_info says when the tier refuses it whole (an entry not
    // as signed, under trusted keys): package_json's "trusted" holds it.
    if (json) {
      nlohmann::json one = package_json(*info);
      one["bad_entries"] = info->bad_entries;
      one["entries_not_as_signed"] = info->entries_not_as_signed;
      // On what grounds "trusted" is said: a trusted key's signature, or
      // (no keys set) the file's owner and mode alone.
      one["trusted_keys_set"] = !keys->empty();
      out.push_back(std::move(one));
      continue;
    }
    auto row = [](const std::string& name) {
      return "  " + name + std::string(name.size() < 13 ? 14 - name.size() : 1, ' ');
    };
    std::cout << shown(info->path) << "\n"
              << row("format") << info->format_version << "\n"
              << row("target") << shown(target_text(*info)) << "\n"
              << row("kernels") << info->kernels << "\n";
    for (const auto& [name, value] : info->metadata) {
      std::cout << row(shown(name)) << (name == "created" ? date_of(value) : shown(value)) << "\n";
    }
    const bool keys_set = !keys->empty();
    std::cout << row("entries") << entries_text(*info, keys_set) << "\n"
              << row("signed") << signature_text(*info) << "\n"
              << row("trusted") << trusted_text(*info, keys_set) << "\n";
  }
  if (json) std::cout << json_text(out, 2) << "\n";
  return status;
}

}  // namespace

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

}  // namespace kcache::tool
