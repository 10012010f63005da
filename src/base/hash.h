// The digests kcache uses: XXH3-128 checks stored bytes and indexes
// entries (the cache key, whose material is compared in full on a hit);
// SHA-256 stands for bytes kept elsewhere (headers on disk, a compiler's
// version output), where only a cryptographic digest is safe.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace kcache {

using Sha256 = std::array<std::uint8_t, 32>;
using Checksum128 = std::array<std::uint8_t, 16>;

Sha256 sha256(std::span<const std::uint8_t> data);
Sha256 sha256(std::string_view text);
// The SHA-256 of `parts` one after the other.
Sha256 sha256_of_parts(std::initializer_list<std::span<const std::uint8_t>> parts);
std::string to_hex(std::span<const std::uint8_t> bytes);
// Writes the 2 * bytes.size() hex digits of `bytes` to `out`.
void write_hex(std::span<const std::uint8_t> bytes, char* out);
// Reads exactly 2 * out.size() hex digits (either case) into `out`; false
// when `text` is not that.
bool read_hex(std::string_view text, std::span<std::uint8_t> out);
// "sha256:<64 hex>" of `text`, the form key material uses.
std::string sha256_field(std::string_view text);
// Runs the first SHA-256 and XXH3 now (idempotent: CPU feature detection,
// xxHash's dispatch), so that the first key derived does not pay for it.
void prepare_hashing();

// XXH3-128 of `data`, in canonical (big-endian) byte order.
Checksum128 xxh3_128(std::span<const std::uint8_t> data);
Checksum128 xxh3_128(std::string_view text);

// XXH3-64 of `text` from `seed`: for a hash table whose candidates are
// then compared in full.
std::uint64_t xxh3_64(std::string_view text, std::uint64_t seed = 0);

// Streaming XXH3-128 over several pieces.
class Checksummer {
 public:
  Checksummer();
  ~Checksummer();
  Checksummer(const Checksummer&) = delete;
  Checksummer& operator=(const Checksummer&) = delete;
  void update(std::span<const std::uint8_t> data);
  Checksum128 finish();

 private:
  // XXH3's state, in place (hash.cpp checks the size): no allocation per
  // entry checked.
  alignas(64) unsigned char state_[640];
};

}  // namespace kcache
