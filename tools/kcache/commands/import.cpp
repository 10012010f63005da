// kcache import: the entries of packages copied into the user cache.
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/package.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/package_warnings.h"

namespace kcache::tool {
namespace {

int run_import(const std::vector<std::string>& packages) {
  auto cache = Cache::open();
  if (!cache) return report_failure(cache.status().message());
  int status = 0;
  for (const auto& path : packages) {
    std::uint64_t bad = 0;
    auto count = CacheAdmin(**cache).import_package(path, &bad);
    if (!count) {
      status = report_failure(with_path_named(path, count.status().message()));
      continue;
    }
    auto info = read_package_info(path);
    // What it held that the user cache had already (not stored again).
    const std::uint64_t held =
        info && info->kernels > *count + bad ? info->kernels - *count - bad : 0;
    std::cout << "imported " << counted(*count, "entry", "entries") << " of " << path << " into "
              << (*cache)->config().user_dir
              << (held > 0 ? " (" + std::to_string(held) + " already there)" : "") << "\n";
    if (info) warn_if_others_could_write(*info, (*cache)->config().trusted_keys);
    if (bad > 0) status = std::max(status, report_left_out(path, bad));
  }
  return status;
}

}  // namespace

Runner add_import_command(CLI::App& app) {
  auto packages = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("import", "Copy the entries of packages into the user cache");
  cmd->add_option("packages", *packages, "Packages (.kdb) to import")->required();
  return [packages] { return run_import(*packages); };
}

}  // namespace kcache::tool
