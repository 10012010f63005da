#include "format/compression.h"

#include "build_config.h"

#if KCACHE_WITH_ZSTD
#include <zstd.h>
#endif

namespace kcache {

std::optional<Compression> parse_compression(std::string_view name) {
  if (name == "none") return Compression::kNone;
  if (name == "zstd") return Compression::kZstd;
  return std::nullopt;
}

std::string_view compression_name(Compression compression) {
  return compression == Compression::kZstd ? "zstd" : "none";
}

bool compression_available(Compression compression) {
  return compression == Compression::kNone || KCACHE_WITH_ZSTD;
}

std::optional<std::vector<std::uint8_t>> compress(Compression compression,
                                                  std::span<const std::uint8_t> input) {
  if (compression == Compression::kNone)
    return std::vector<std::uint8_t>(input.begin(), input.end());
#if KCACHE_WITH_ZSTD
  // Level 3: 180-650 MB/s here; level 19 gains ~20% size at 50x the time
  // (../shared/reference/baseline.md §4), and compression sits on the miss path.
  constexpr int kLevel = 3;
  std::vector<std::uint8_t> out(ZSTD_compressBound(input.size()));
  std::size_t n = ZSTD_compress(out.data(), out.size(), input.data(), input.size(), kLevel);
  if (ZSTD_isError(n)) return std::nullopt;
  out.resize(n);
  return out;
#else
  return std::nullopt;
#endif
}

Result<ByteBuffer> decompress(Compression compression, std::span<const std::uint8_t> input,
                              std::size_t expected_size) {
  if (compression == Compression::kNone) {
    if (input.size() != expected_size) return Status::corruption("stored size mismatch");
    return ByteBuffer::copy_of(input);
  }
#if KCACHE_WITH_ZSTD
  ByteBuffer out = ByteBuffer::allocate(expected_size);
  std::size_t n = ZSTD_decompress(out.data.get(), expected_size, input.data(), input.size());
  if (ZSTD_isError(n) || n != expected_size) {
    return Status::corruption("zstd payload does not decompress to its recorded size");
  }
  return out;
#else
  return Status::not_supported("entry is zstd-compressed but this build has no zstd");
#endif
}

}  // namespace kcache
