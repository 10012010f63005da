// kcache sign: packages signed in place with a private key (kcache
// keygen).
#include <kcache/package.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/option_checks.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_sign(const std::vector<std::string>& packages, const std::string& key) {
  if (int bad = check_key_option("--key", key); bad != 0) return bad;
  int status = 0;
  for (const auto& path : packages) {
    // Signed in place: a link is refused, not replaced by a signed copy
    // while what it points at stays unsigned.
    if (Status s = check_output_path(path, path); !s.is_ok()) {
      status = report_failure(s.message() + "; not signed");
      continue;
    }
    auto id = sign_package(path, key);
    if (!id) {
      status = report_failure(with_path_named(path, id.status().message()));
      continue;
    }
    std::cout << "signed " << path << " with key " << *id << "\n";
  }
  return status;
}

}  // namespace

Runner add_sign_command(CLI::App& app) {
  auto packages = std::make_shared<std::vector<std::string>>();
  auto key = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "sign", "Sign packages (.kdb) in place with a private key (kcache keygen)");
  cmd->add_option("packages", *packages, "Packages to sign")->required();
  cmd->add_option("--key", *key, "The private key file")->required()->check(names_a_path());
  return [packages, key] { return run_sign(*packages, *key); };
}

}  // namespace kcache::tool
