#include "base/hash.h"

// OpenSSL's SHA256_* functions (deprecated in 3.0, kept in every 3.x):
// the EVP route loads OpenSSL's configuration and providers on first use,
// 0.7 ms of every process's start on this machine, for the same code.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's layout, to hold it in place
#include <xxhash.h>

#include "build_config.h"
#if KCACHE_XXHASH_DISPATCH
// Routes XXH3 through the CPU-dispatched (AVX2/AVX-512) code in libxxhash.
#include <xxh_x86dispatch.h>
#endif

#include <cstdio>
#include <cstring>

namespace kcache {

Sha256 sha256(std::span<const std::uint8_t> data) { return sha256_of_parts({data}); }

Sha256 sha256_of_parts(std::initializer_list<std::span<const std::uint8_t>> parts) {
  Sha256 digest{};
  SHA256_CTX context;
  SHA256_Init(&context);
  for (const auto& part : parts) SHA256_Update(&context, part.data(), part.size());
  SHA256_Final(digest.data(), &context);
  return digest;
}

Sha256 sha256(std::string_view text) {
  return sha256(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

void write_hex(std::span<const std::uint8_t> bytes, char* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out(bytes.size() * 2, '0');
  write_hex(bytes, out.data());
  return out;
}

bool read_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() != 2 * out.size()) return false;
  auto digit = [](char c) {
    return (c >= '0' && c <= '9')   ? c - '0'
           : (c >= 'a' && c <= 'f') ? c - 'a' + 10
           : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                    : -1;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = digit(text[2 * i]);
    const int low = digit(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

std::string sha256_field(std::string_view text) {
  constexpr std::string_view kPrefix = "sha256:";
  const Sha256 digest = sha256(text);
  std::string out(kPrefix.size() + 2 * digest.size(), '0');
  kPrefix.copy(out.data(), kPrefix.size());
  write_hex(digest, out.data() + kPrefix.size());
  return out;
}

namespace {
static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64,
              "Checksummer::state_ cannot hold this xxHash's XXH3_state_t");
XXH3_state_t* state_of(unsigned char* storage) { return reinterpret_cast<XXH3_state_t*>(storage); }
}  // namespace

void prepare_hashing() {
  static const bool prepared = [] {
    (void)sha256(std::string_view());
    // xxHash picks its SIMD code on first use (CPUID, which traps to the
    // hypervisor in a VM).
    (void)xxh3_128(std::string_view("kcache"));
    Checksummer checksummer;
    checksummer.update({reinterpret_cast<const std::uint8_t*>("kcache"), 6});
    (void)checksummer.finish();
    return true;
  }();
  (void)prepared;
}

Checksum128 xxh3_128(std::span<const std::uint8_t> data) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(data.data(), data.size()));
  Checksum128 out{};
  std::memcpy(out.data(), canonical.digest, out.size());
  return out;
}

Checksum128 xxh3_128(std::string_view text) {
  return xxh3_128(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::uint64_t xxh3_64(std::string_view text, std::uint64_t seed) {
  return XXH3_64bits_withSeed(text.data(), text.size(), seed);
}

Checksummer::Checksummer() { XXH3_128bits_reset(state_of(state_)); }

Checksummer::~Checksummer() = default;

void Checksummer::update(std::span<const std::uint8_t> data) {
  XXH3_128bits_update(state_of(state_), data.data(), data.size());
}

Checksum128 Checksummer::finish() {
  XXH128_hash_t hash = XXH3_128bits_digest(state_of(state_));
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  Checksum128 out{};
  std::memcpy(out.data(), canonical.digest, out.size());
  return out;
}

}  // namespace kcache
