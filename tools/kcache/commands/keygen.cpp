// kcache keygen: a key pair to sign packages with (`pack --sign`,
// `merge --sign` and `sign` sign with it; KCACHE_TRUSTED_KEYS trusts it).
#include <kcache/package.h>

#include <iostream>
#include <memory>
#include <string>

#include "commands/commands.h"
#include "support/failure_report.h"

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

}  // namespace kcache::tool
