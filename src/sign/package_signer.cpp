#include "sign/package_signer.h"

#include "sign/ed25519.h"
#include "sign/key_file.h"

namespace kcache {

Result<KdbSigner> signer_from_key_file(const std::string& path, const Env& env) {
  auto key = read_secret_key(path, env);
  if (!key) return key.status();
  if (Status available = ed25519_available(); !available.is_ok()) return available;
  KdbSigner signer;
  signer.public_key = ed25519_public_of(*key);
  signer.sign = [secret = *key](std::span<const std::uint8_t> message) {
    return ed25519_sign(message, secret);
  };
  return signer;
}

Result<std::optional<KdbSigner>> optional_signer(const std::string& path, const Env& env) {
  if (path.empty()) return std::optional<KdbSigner>();
  auto signer = signer_from_key_file(path, env);
  if (!signer) return signer.status();
  return std::optional<KdbSigner>(std::move(*signer));
}

}  // namespace kcache
