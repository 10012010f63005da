#include "support/package_warnings.h"

#include <iostream>

#include "support/failure_report.h"

namespace kcache::tool {

void warn_if_others_could_write(const PackageInfo& info,
                                const std::vector<std::string>& trusted_keys) {
  if (info.untrusted.empty() || !trusted_keys.empty()) return;
  std::cerr << "kcache: warning: " << info.path << ": another user could have written it ("
            << info.untrusted
            << "), and its copy is yours now: make sure it is the package you meant (sign "
               "packages and set KCACHE_TRUSTED_KEYS to have kcache check)\n";
}

int report_left_out(const std::string& packages, std::uint64_t bad) {
  const bool one = bad == 1;
  return report_failure(
      packages + ": " + std::to_string(bad) +
      (one ? " entry fails its checks and was" : " entries fail their checks and were") +
      " left out ('kcache verify " + packages + "' says which)");
}

}  // namespace kcache::tool
