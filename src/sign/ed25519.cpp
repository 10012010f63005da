#include "sign/ed25519.h"

#include <sodium.h>

#include <algorithm>
#include <memory>

#include "env/dynamic_library.h"

namespace kcache {
namespace {

// libsodium's entry points, bound once; the prototypes come from its header.
struct Sodium {
  std::shared_ptr<DynamicLibrary> library;
  decltype(&::sodium_init) init = nullptr;
  decltype(&::crypto_sign_ed25519_keypair) keypair = nullptr;
  decltype(&::crypto_sign_ed25519_seed_keypair) seed_keypair = nullptr;
  decltype(&::crypto_sign_ed25519_detached) sign = nullptr;
  decltype(&::crypto_sign_ed25519_verify_detached) verify = nullptr;
  Status status;
};

static_assert(crypto_sign_ed25519_PUBLICKEYBYTES == sizeof(Ed25519PublicKey));
static_assert(crypto_sign_ed25519_SECRETKEYBYTES == sizeof(Ed25519SecretKey));
static_assert(crypto_sign_ed25519_BYTES == sizeof(Ed25519Signature));

Sodium load() {
  Sodium s;
  auto library = DynamicLibrary::open({"libsodium.so.23", "libsodium.so.26", "libsodium.so"});
  if (!library) {
    s.status = Status::unavailable(
        "libsodium is needed to sign or check packages (Debian: apt-get install libsodium23): " +
        library.status().message());
    return s;
  }
  s.library = *library;
  for (Status bound : {s.library->bind("sodium_init", s.init),
                       s.library->bind("crypto_sign_ed25519_keypair", s.keypair),
                       s.library->bind("crypto_sign_ed25519_seed_keypair", s.seed_keypair),
                       s.library->bind("crypto_sign_ed25519_detached", s.sign),
                       s.library->bind("crypto_sign_ed25519_verify_detached", s.verify)}) {
    if (!bound.is_ok()) {
      s.status = bound;
      return s;
    }
  }
  // 0: initialized now, 1: already; -1: no randomness source.
  if (s.init() < 0) s.status = Status::unavailable("libsodium could not be initialized");
  return s;
}

const Sodium& sodium() {
  static const Sodium loaded = load();
  return loaded;
}

}  // namespace

Status ed25519_available() { return sodium().status; }

Result<Ed25519KeyPair> ed25519_generate() {
  const Sodium& s = sodium();
  if (!s.status.is_ok()) return s.status;
  Ed25519KeyPair pair;
  if (s.keypair(pair.public_key.data(), pair.secret_key.data()) != 0) {
    return Status::internal("libsodium could not make a key pair");
  }
  return pair;
}

Result<Ed25519Signature> ed25519_sign(std::span<const std::uint8_t> message,
                                      const Ed25519SecretKey& key) {
  const Sodium& s = sodium();
  if (!s.status.is_ok()) return s.status;
  Ed25519Signature signature;
  if (s.sign(signature.data(), nullptr, message.data(), message.size(), key.data()) != 0) {
    return Status::internal("libsodium could not sign");
  }
  return signature;
}

Result<bool> ed25519_verify(std::span<const std::uint8_t> message,
                            const Ed25519Signature& signature, const Ed25519PublicKey& key) {
  const Sodium& s = sodium();
  if (!s.status.is_ok()) return s.status;
  return s.verify(signature.data(), message.data(), message.size(), key.data()) == 0;
}

Result<bool> ed25519_key_is_whole(const Ed25519SecretKey& key) {
  const Sodium& s = sodium();
  if (!s.status.is_ok()) return s.status;
  Ed25519KeyPair derived;
  if (s.seed_keypair(derived.public_key.data(), derived.secret_key.data(), key.data()) != 0) {
    return Status::internal("libsodium could not derive a key pair");
  }
  return derived.secret_key == key;
}

Ed25519PublicKey ed25519_public_of(const Ed25519SecretKey& key) {
  Ed25519PublicKey out;
  std::copy(key.begin() + 32, key.end(), out.begin());
  return out;
}

}  // namespace kcache
