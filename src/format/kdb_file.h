// The .kdb package file: an immutable, read-only database of entries for
// one target. Layout (docs/formats.md §2): a 64-byte header, the encoded
// entries back to back, a sorted index of (key, offset, size), and a small
// metadata block; the header's checksum covers header, index and metadata,
// and each entry carries its own.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "env/env.h"
#include "format/byte_buffer.h"
#include "format/field_text.h"

namespace kcache {

inline constexpr std::uint32_t kKdbFormatVersion = 2;
inline constexpr std::size_t kKdbHeaderSize = 64;
// key, entry offset (8 bytes), entry size (8 bytes)
inline constexpr std::size_t kKdbIndexEntrySize = CacheKey::kSize + 16;

struct KdbSlot {
  CacheKey key;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

class KdbReader {
 public:
  // Opens and checks header and index (one read each). kNotFound when the
  // file is absent; kCorruption when it is not a valid .kdb.
  static Result<std::unique_ptr<KdbReader>> open(const std::string& path, const Env& env);

  [[nodiscard]] std::optional<KdbSlot> find(const CacheKey& key) const;
  // The encoded entry in `slot` (not yet verified: decode_entry does that).
  [[nodiscard]] Result<ByteBuffer> read(const KdbSlot& slot) const;
  [[nodiscard]] const std::vector<KdbSlot>& slots() const { return slots_; }
  [[nodiscard]] const Fields& metadata() const { return metadata_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  KdbReader() = default;
  std::string path_;
  std::unique_ptr<File> file_;
  std::vector<KdbSlot> slots_;  // sorted by key
  Fields metadata_;
};

// Writes a .kdb holding `entries` (encoded entries with their keys; keys
// must be distinct) and `metadata`, atomically replacing `path`.
Status write_kdb(Env& env, const std::string& path,
                 const std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>>& entries,
                 const Fields& metadata);

}  // namespace kcache
