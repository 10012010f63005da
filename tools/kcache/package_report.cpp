// kcache info PKG... and kcache verify PKG...: what packages say of
// themselves, and whether the system tier would use them.
#include <kcache/options.h>
#include <kcache/package.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <iostream>

#include "commands.h"

namespace kcache::tool {
namespace {

// The keys packages are held to: those named, else KCACHE_TRUSTED_KEYS.
// A named key that cannot be used is a usage error (nullopt, said); a
// configured one a warning.
std::optional<std::vector<std::string>> keys_to_check(const std::vector<std::string>& named) {
  if (!named.empty()) {
    if (auto ids = read_trusted_keys(named); !ids) {
      std::cerr << "kcache: --trusted: " << ids.status().message() << "\n";
      return std::nullopt;
    }
    return named;
  }
  std::vector<std::string> configured = resolve_config(CacheOptions{}).trusted_keys;
  if (auto ids = read_trusted_keys(configured); !ids) {
    std::cerr << "kcache: Warning [SystemDb] " << ids.status().message() << "\n";
  }
  return configured;
}

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
    return "by key " + info.signer + ", BROKEN: " + info.signature_problem;
  return "by key " + info.signer + " (the signature holds)";
}

nlohmann::json package_json(const PackageInfo& info) {
  nlohmann::json metadata = nlohmann::json::object();
  for (const auto& [name, value] : info.metadata) {
    if (name == "compiler") {
      metadata["compilers"].push_back(value);
    } else {
      metadata[name] = value;
    }
  }
  return {{"path", info.path},
          {"format", info.format_version},
          {"kernels", info.kernels},
          {"metadata", metadata},
          {"signer", info.signer},
          {"signature_ok", !info.signer.empty() && info.signature_problem.empty()},
          {"signature_problem", info.signature_problem},
          {"trusted", info.refusal.empty()},
          {"untrusted_reason", info.refusal}};
}

}  // namespace

int run_package_info(bool json, const std::vector<std::string>& packages) {
  auto keys = keys_to_check({});
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    auto info = read_package_info(path, /*check_entries=*/false, *keys);
    if (!info) {
      status = report_failure(path + ": " + info.status().message());
      continue;
    }
    if (json) {
      out.push_back(package_json(*info));
      continue;
    }
    auto row = [](const std::string& name) {
      return "  " + name + std::string(name.size() < 13 ? 14 - name.size() : 1, ' ');
    };
    std::cout << info->path << "\n"
              << row("format") << info->format_version << "\n"
              << row("kernels") << info->kernels << "\n";
    for (const auto& [name, value] : info->metadata) {
      std::cout << row(name) << (name == "created" ? date_of(value) : value) << "\n";
    }
    std::cout << row("signed") << signature_text(*info) << "\n"
              << row("trusted")
              << (info->refusal.empty()
                      ? "yes"
                      : "no: " + info->refusal + " (the system tier will not use it)")
              << "\n";
  }
  if (json) std::cout << out.dump(2) << "\n";
  return status;
}

int run_verify_packages(bool json, const std::vector<std::string>& packages,
                        const std::vector<std::string>& trusted_keys) {
  auto keys = keys_to_check(trusted_keys);
  if (!keys) return 2;
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    auto info = read_package_info(path, /*check_entries=*/true, *keys);
    std::vector<std::string> problems;
    if (!info) {
      problems.push_back(info.status().message());
    } else {
      if (info->bad_entries > 0) {
        problems.push_back(std::to_string(info->bad_entries) + " of its " +
                           std::to_string(info->kernels) + " entries fail their checks");
      }
      if (!info->signature_problem.empty()) problems.push_back(info->signature_problem);
      // A broken signature is the refusal too: said once.
      if (!info->refusal.empty() && info->refusal != info->signature_problem) {
        problems.push_back("the system tier would not use it: " + info->refusal);
      }
    }
    if (!problems.empty()) status = 1;
    if (json) {
      nlohmann::json one = info ? package_json(*info) : nlohmann::json{{"path", path}};
      one["bad_entries"] = info ? info->bad_entries : 0;
      one["problems"] = problems;
      one["ok"] = problems.empty();
      out.push_back(std::move(one));
      continue;
    }
    if (problems.empty()) {
      std::cout << path << ": ok, " << info->kernels << " kernels"
                << (info->signer.empty() ? ", not signed" : ", signed by key " + info->signer)
                << (keys->empty() ? "" : ", trusted") << "\n";
    }
    for (const auto& problem : problems) std::cout << path << ": problem: " << problem << "\n";
  }
  if (json) std::cout << out.dump(2) << "\n";
  return status;
}

}  // namespace kcache::tool
