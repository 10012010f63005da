// The two digests kcache uses: SHA-256 names things (keys, sources,
// headers), XXH3-128 checks stored bytes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kcache {

using Sha256 = std::array<std::uint8_t, 32>;
using Checksum128 = std::array<std::uint8_t, 16>;

Sha256 sha256(std::span<const std::uint8_t> data);
Sha256 sha256(std::string_view text);
std::string to_hex(std::span<const std::uint8_t> bytes);
// "sha256:<64 hex>" of `text`, the form key material uses.
std::string sha256_field(std::string_view text);

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
  void* state_;
};

}  // namespace kcache
