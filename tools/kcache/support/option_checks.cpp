#include "support/option_checks.h"

#include <kcache/options.h>
#include <kcache/package.h>

#include <iostream>

namespace kcache::tool {

int check_key_option(const std::string& option, const std::string& key_path) {
  auto id = kcache::check_signing_key(key_path);
  if (id) return 0;
  // A key file that is missing or not a usable key is an input that cannot
  // be used, as an unreadable source is: 1, not a usage error.
  std::cerr << "kcache: " << option << ": " << id.status().message() << "\n";
  return 1;
}

std::optional<std::vector<std::string>> trusted_keys_to_check(
    const std::vector<std::string>& named) {
  if (!named.empty()) {
    // Judged as the system tier judges KCACHE_TRUSTED_KEYS: a key it would
    // pass over is said and passed over; none at all is a failure.
    const TrustedKeyList listed = list_trusted_keys(named);
    for (const auto& problem : listed.problems) {
      std::cerr << "kcache: " << (listed.ids.empty() ? "" : "warning: ") << "--trusted: " << problem
                << "\n";
    }
    if (listed.ids.empty()) {
      if (listed.problems.empty()) std::cerr << "kcache: --trusted: no key could be read\n";
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

}  // namespace kcache::tool
