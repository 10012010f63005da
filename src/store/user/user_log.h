// The two files of one user-tier database (docs/formats.md §3):
//   <db>.ukdb  the log: a 64-byte header, then records back to back, each
//              starting at a multiple of 8: an encoded entry (magic KCEN,
//              self-checking, docs/formats.md §1) or a removal (KCRM).
//   <db>.ukdx  its hint: a 64-byte header naming the log it describes (by
//              the log's random generation), then one 32-byte record per
//              log record: key, offset, size (0 for a removal), check.
// The log is the truth; the hint is derived from it and rebuilt from it
// whenever it does not match. Pure encoding here; the tier does the I/O.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "env/env.h"

namespace kcache::userlog {

inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::size_t kHintRecordSize = 32;
inline constexpr std::size_t kRemovalSize = 32;
inline constexpr std::uint64_t kAlignment = 8;
// The tier's folders (and quarantine/) are private to the user.
inline constexpr mode_t kFolderMode = 0700;

using Generation = std::array<std::uint8_t, 16>;
enum class FileKind { kLog, kHint };

// A fresh random generation (getrandom(2)).
Generation new_generation();

std::array<std::uint8_t, kHeaderSize> encode_header(FileKind kind, const Generation& generation);
// The generation named by a header; kCorruption when `bytes` is not a
// header of that kind and version (short, bad magic, bad check).
Result<Generation> decode_header(FileKind kind, std::span<const std::uint8_t> bytes);

// Where a record of the log lies. `size` is 0 for a removal (whose record
// is kRemovalSize bytes at `offset`).
struct HintRecord {
  CacheKey key;
  std::uint64_t offset = 0;
  std::uint32_t size = 0;
  [[nodiscard]] bool removal() const { return size == 0; }
  // Where the next record of the log starts.
  [[nodiscard]] std::uint64_t end() const;
};

std::array<std::uint8_t, kHintRecordSize> encode_hint(const HintRecord& record);
// nullopt when the record's check fails (a torn or damaged record).
std::optional<HintRecord> decode_hint(std::span<const std::uint8_t> bytes);

std::array<std::uint8_t, kRemovalSize> encode_removal(const CacheKey& key);
std::optional<CacheKey> decode_removal(std::span<const std::uint8_t> bytes);

// `size` rounded up to the alignment of log records.
inline std::uint64_t padded(std::uint64_t size) {
  return (size + kAlignment - 1) / kAlignment * kAlignment;
}

// One step of a scan of the log.
struct ScanStep {
  enum class Kind { kEntry, kRemoval, kDamaged, kEnd };
  Kind kind = Kind::kEnd;
  HintRecord record;          // kEntry, kRemoval
  std::uint64_t next = 0;     // where the next step starts
  std::uint64_t damaged = 0;  // kDamaged: bytes skipped ([record.offset, next))
  Status problem;             // kDamaged: what was wrong with the first of them
};

// Reads the log record at `offset` of `log`, whose size is `log_size`:
// a verified entry or removal, or the damaged bytes up to the next valid
// record (or the end), or kEnd at `log_size`. Reads the whole record to
// verify it; an I/O error is returned as such.
Result<ScanStep> scan_step(const File& log, std::uint64_t offset, std::uint64_t log_size);

}  // namespace kcache::userlog
