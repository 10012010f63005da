// The entry: one self-checking record holding a binary, the key material it
// was compiled from and the compiler's metadata. The same bytes are stored
// in every tier. Layout: docs/formats.md §1.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_buffer.h"
#include "base/field_text.h"
#include "format/compression.h"

namespace kcache {

inline constexpr std::uint16_t kEntryFormatVersion = 2;
inline constexpr std::size_t kEntryHeaderSize = 88;
// Sizes beyond these are refused on encode and read as corruption on decode.
inline constexpr std::size_t kMaxMaterialSize = 64u << 20;  // holds the source
inline constexpr std::size_t kMaxMetadataSize = 1u << 20;
inline constexpr std::size_t kMaxPayloadSize = 1u << 30;

// A decoded, verified entry. The payload is a view into `storage`.
struct Entry {
  CacheKey key;
  std::int64_t created_unix = 0;
  SharedText material;  // KeyMaterial::serialize(); shares `storage` when decoded uncompressed
  Fields metadata;
  ByteBuffer storage;
  std::size_t payload_offset = 0;
  std::size_t payload_size = 0;

  [[nodiscard]] std::span<const std::uint8_t> payload() const {
    return storage.span().subspan(payload_offset, payload_size);
  }
};

// Encodes `entry`. With kZstd the payload is stored compressed only when
// that is smaller (and zstd is built in); otherwise it is stored as is.
// kInvalidArgument when a part exceeds its limit.
Result<std::vector<std::uint8_t>> encode_entry(const Entry& entry, Compression compression);

// The whole size of the entry whose first kEntryHeaderSize bytes are
// `header`, after checking what the header alone can show (magic, version,
// flags, sizes in range); kCorruption otherwise. For scanning a log.
Result<std::uint64_t> entry_size(std::span<const std::uint8_t> header);

// How much of an entry decode_entry checks: all of it, or all but the
// checksum, for bytes that passed it before and cannot have changed since
// (a mapped package entry after its first use: docs/design.md §3.2).
enum class EntryCheck { kFull, kChecksumPassed };

// Decodes and verifies `bytes[offset, offset+size)`: magic, version, sizes,
// checksum, and that the stored key equals `expected_key` when given.
// kCorruption on any mismatch; the message says what was wrong. When the
// payload is not compressed, the returned entry's material and payload are
// views into `bytes` (nothing is copied); otherwise both are copies and
// `bytes` is not kept.
// The metadata field a compile's duration is kept in (microseconds), so
// that a hit can count the time it saved.
inline constexpr std::string_view kCompileMicrosField = "compile_us";
// Its value; nullopt when the entry has none (a package's, say).
std::optional<std::uint64_t> compile_micros_of(const Fields& metadata);

Result<Entry> decode_entry(const ByteBuffer& bytes, const CacheKey* expected_key = nullptr,
                           EntryCheck check = EntryCheck::kFull);

// `entry` holding bytes of its own: its storage copied, and its material,
// when it lived in the storage, pointing into the copy. For keeping an
// entry that is a view of a file that other processes write (a mapped
// user-tier log) where no later check will see it (the memory tier).
Entry owned_copy(const Entry& entry);

}  // namespace kcache
