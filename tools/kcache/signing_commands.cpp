// kcache keygen and kcache sign: the keys packages are signed with
// (`pack --sign` and `merge --sign` sign as they write).
#include <kcache/package.h>

#include <iostream>

#include "commands/commands.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_keygen(const std::string& output, bool force) {
  if (output.empty()) {
    std::cerr << "kcache: --output is empty; name the private key's file\n";
    return 2;
  }
  auto id = generate_signing_key(output, force);
  if (!id) return report_failure(id.status().message());
  std::cout << "wrote the private key " << output
            << " (keep it secret; mode 0600) and the public key " << output << ".pub (key " << *id
            << ")\n"
            << "sign with 'kcache pack ... --sign " << output
            << "'; trust with KCACHE_TRUSTED_KEYS=" << output << ".pub\n";
  return 0;
}

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
      status = report_failure(about(path, id.status().message()));
      continue;
    }
    std::cout << "signed " << path << " with key " << *id << "\n";
  }
  return status;
}

}  // namespace

Runner add_keygen_command(CLI::App& app) {
  auto output = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "keygen", "Make an Ed25519 key pair to sign packages with: KEY (private) and KEY.pub");
  cmd->add_option("--output,-o", *output, "The private key file; the public key is <it>.pub")
      ->required();
  cmd->add_flag("--force", *force, "Replace key files that exist");
  return [output, force] { return run_keygen(*output, *force); };
}

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
