// Ed25519 signatures, from libsodium loaded at run time (libsodium.so.23),
// so that a process that never signs or checks a package never loads it
// and the library builds and runs without it. Thread-safe.
#pragma once

#include <kcache/status.h>

#include <array>
#include <cstdint>
#include <span>

namespace kcache {

using Ed25519PublicKey = std::array<std::uint8_t, 32>;
// libsodium's secret key: the 32-byte seed, then the public key.
using Ed25519SecretKey = std::array<std::uint8_t, 64>;
using Ed25519Signature = std::array<std::uint8_t, 64>;

struct Ed25519KeyPair {
  Ed25519PublicKey public_key{};
  Ed25519SecretKey secret_key{};
};

// kUnavailable, naming the library, when libsodium cannot be loaded.
Status ed25519_available();
Result<Ed25519KeyPair> ed25519_generate();
Result<Ed25519Signature> ed25519_sign(std::span<const std::uint8_t> message,
                                      const Ed25519SecretKey& key);
// Whether `signature` is `key`'s over `message`; kUnavailable as above.
Result<bool> ed25519_verify(std::span<const std::uint8_t> message,
                            const Ed25519Signature& signature, const Ed25519PublicKey& key);
// Whether a secret key's public half is the one its seed makes (a key file
// with another key's public half pasted in signs what no one can check);
// kUnavailable as above.
Result<bool> ed25519_key_is_whole(const Ed25519SecretKey& key);
// The public half of a secret key (its last 32 bytes).
Ed25519PublicKey ed25519_public_of(const Ed25519SecretKey& key);

}  // namespace kcache
