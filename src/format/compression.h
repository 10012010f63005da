// Entry payload compression. zstd is optional at build time; an entry that
// names a codec this build lacks decodes as a miss, never as garbage.
#pragma once

#include <kcache/status.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/byte_buffer.h"

namespace kcache {

enum class Compression : std::uint8_t { kNone = 0, kZstd = 1 };

std::optional<Compression> parse_compression(std::string_view name);
std::string_view compression_name(Compression compression);
bool compression_available(Compression compression);

// Compressed bytes, or nullopt when the codec is unavailable or fails.
std::optional<std::vector<std::uint8_t>> compress(Compression compression,
                                                  std::span<const std::uint8_t> input);
// Exactly `expected_size` bytes, or kCorruption.
Result<ByteBuffer> decompress(Compression compression, std::span<const std::uint8_t> input,
                              std::size_t expected_size);

}  // namespace kcache
