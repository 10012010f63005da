#include "store/user/user_log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>

#include "base/hash.h"
#include "env/random.h"
#include "format/endian.h"
#include "format/entry.h"

namespace kcache::userlog {
namespace {

constexpr std::uint8_t kLogMagic[8] = {'K', 'C', 'U', 'L', 'O', 'G', 0, 0};
constexpr std::uint8_t kHintMagic[8] = {'K', 'C', 'U', 'H', 'N', 'T', 0, 0};
constexpr std::uint8_t kEntryMagic[4] = {'K', 'C', 'E', 'N'};
constexpr std::uint8_t kRemovalMagic[4] = {'K', 'C', 'R', 'M'};
constexpr std::size_t kHeaderChecked = 48;  // the header's check covers [0, 48)
constexpr std::size_t kHintChecked = 28;
constexpr std::size_t kRemovalChecked = 24;
// How far a scan reads at a time while looking for the next valid record
// after damaged bytes.
constexpr std::size_t kResyncChunk = 1u << 20;

Checksum128 check_of(std::span<const std::uint8_t> bytes) { return xxh3_128(bytes); }

CacheKey key_at(const std::uint8_t* p) {
  CacheKey::Bytes bytes;
  std::memcpy(bytes.data(), p, CacheKey::kSize);
  return CacheKey(bytes);
}

// The valid record at `offset`, or nullopt (kCorruption-worthy bytes, or
// bytes that are gone: the log may be cut while it is read, by a writer
// mending a torn tail); an I/O error as a Status.
Result<std::optional<HintRecord>> record_at(const File& log, std::uint64_t offset,
                                            std::uint64_t log_size) {
  const std::uint64_t left = log_size - offset;
  std::uint8_t header[kEntryHeaderSize];
  const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(left, sizeof header));
  if (head < 4) return std::optional<HintRecord>();
  if (Status s = log.read_at(offset, {header, head}); !s.is_ok()) {
    if (s.code() == StatusCode::kCorruption) return std::optional<HintRecord>();  // cut short
    return s;
  }
  if (std::memcmp(header, kRemovalMagic, 4) == 0) {
    auto key = decode_removal({header, head});
    if (!key) return std::optional<HintRecord>();
    return std::optional<HintRecord>(HintRecord{*key, offset, 0});
  }
  if (std::memcmp(header, kEntryMagic, 4) != 0) return std::optional<HintRecord>();
  auto size = entry_size({header, head});
  if (!size || *size > left) return std::optional<HintRecord>();
  ByteBuffer bytes = ByteBuffer::allocate(static_cast<std::size_t>(*size));
  if (Status s = log.read_at(offset, bytes.mutable_span()); !s.is_ok()) {
    if (s.code() == StatusCode::kCorruption) return std::optional<HintRecord>();  // cut short
    return s;
  }
  auto entry = decode_entry(bytes);
  if (!entry) return std::optional<HintRecord>();
  return std::optional<HintRecord>(
      HintRecord{entry->key, offset, static_cast<std::uint32_t>(*size)});
}

}  // namespace

Generation new_generation() {
  Generation generation;
  if (random_bytes(generation)) return generation;
  // No entropy source (some sandboxes): time, address and a counter are
  // unique enough for telling two logs of one path apart.
  static std::atomic<std::uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string seed = std::to_string(now) + "/" + std::to_string(counter.fetch_add(1)) + "/" +
                           std::to_string(reinterpret_cast<std::uintptr_t>(&generation));
  return xxh3_128(seed);
}

std::uint64_t HintRecord::end() const { return offset + (removal() ? kRemovalSize : padded(size)); }

std::array<std::uint8_t, kHeaderSize> encode_header(FileKind kind, const Generation& generation) {
  std::array<std::uint8_t, kHeaderSize> out{};
  std::memcpy(out.data(), kind == FileKind::kLog ? kLogMagic : kHintMagic, 8);
  le::put_u32(out.data() + 8, kFormatVersion);
  std::memcpy(out.data() + 16, generation.data(), generation.size());
  Checksum128 check = check_of({out.data(), kHeaderChecked});
  std::memcpy(out.data() + kHeaderChecked, check.data(), check.size());
  return out;
}

Result<Generation> decode_header(FileKind kind, std::span<const std::uint8_t> bytes) {
  const char* what = kind == FileKind::kLog ? "log" : "hint file";
  if (bytes.size() < kHeaderSize) {
    return Status::corruption(std::string("not a kcache ") + what + " (shorter than its header)");
  }
  if (std::memcmp(bytes.data(), kind == FileKind::kLog ? kLogMagic : kHintMagic, 8) != 0) {
    return Status::corruption(std::string("not a kcache ") + what + " (bad magic)");
  }
  Checksum128 check = check_of(bytes.first(kHeaderChecked));
  if (std::memcmp(check.data(), bytes.data() + kHeaderChecked, check.size()) != 0) {
    return Status::corruption(std::string("damaged ") + what + " header (checksum mismatch)");
  }
  if (le::get_u32(bytes.data() + 8) != kFormatVersion) {
    return Status::corruption(std::string("unknown ") + what + " format version " +
                              std::to_string(le::get_u32(bytes.data() + 8)));
  }
  Generation generation;
  std::memcpy(generation.data(), bytes.data() + 16, generation.size());
  return generation;
}

std::array<std::uint8_t, kHintRecordSize> encode_hint(const HintRecord& record) {
  std::array<std::uint8_t, kHintRecordSize> out{};
  std::memcpy(out.data(), record.key.bytes().data(), CacheKey::kSize);
  le::put_u64(out.data() + 16, record.offset);
  le::put_u32(out.data() + 24, record.size);
  Checksum128 check = check_of({out.data(), kHintChecked});
  std::memcpy(out.data() + kHintChecked, check.data(), 4);
  return out;
}

std::optional<HintRecord> decode_hint(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHintRecordSize) return std::nullopt;
  Checksum128 check = check_of(bytes.first(kHintChecked));
  if (std::memcmp(check.data(), bytes.data() + kHintChecked, 4) != 0) return std::nullopt;
  HintRecord record{key_at(bytes.data()), le::get_u64(bytes.data() + 16),
                    le::get_u32(bytes.data() + 24)};
  if (record.offset < kHeaderSize || record.offset % kAlignment != 0) return std::nullopt;
  return record;
}

std::array<std::uint8_t, kRemovalSize> encode_removal(const CacheKey& key) {
  std::array<std::uint8_t, kRemovalSize> out{};
  std::memcpy(out.data(), kRemovalMagic, 4);
  std::memcpy(out.data() + 8, key.bytes().data(), CacheKey::kSize);
  Checksum128 check = check_of({out.data(), kRemovalChecked});
  std::memcpy(out.data() + kRemovalChecked, check.data(), 8);
  return out;
}

std::optional<CacheKey> decode_removal(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kRemovalSize || std::memcmp(bytes.data(), kRemovalMagic, 4) != 0) {
    return std::nullopt;
  }
  Checksum128 check = check_of(bytes.first(kRemovalChecked));
  if (std::memcmp(check.data(), bytes.data() + kRemovalChecked, 8) != 0) return std::nullopt;
  if (std::any_of(bytes.data() + 4, bytes.data() + 8, [](std::uint8_t b) { return b != 0; })) {
    return std::nullopt;
  }
  return key_at(bytes.data() + 8);
}

Result<ScanStep> scan_step(const File& log, std::uint64_t offset, std::uint64_t log_size) {
  ScanStep step;
  if (offset >= log_size) {
    step.next = offset;
    return step;
  }
  auto found = record_at(log, offset, log_size);
  if (!found) return found.status();
  if (*found) {
    step.kind = (*found)->removal() ? ScanStep::Kind::kRemoval : ScanStep::Kind::kEntry;
    step.record = **found;
    step.next = std::min(step.record.end(), log_size);
    return step;
  }
  // Damaged: look for the next aligned position where a valid record starts.
  step.kind = ScanStep::Kind::kDamaged;
  step.record.offset = offset;
  step.problem = Status::corruption("damaged log record at offset " + std::to_string(offset));
  std::vector<std::uint8_t> chunk;
  for (std::uint64_t at = offset + kAlignment; at < log_size;) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(kResyncChunk, log_size - at));
    chunk.resize(n);
    if (Status s = log.read_at(at, chunk); !s.is_ok()) {
      if (s.code() != StatusCode::kCorruption) return s;
      break;  // the log was cut meanwhile: what is left is damaged up to its old end
    }
    for (std::size_t i = 0; i + 4 <= n; i += kAlignment) {
      if (std::memcmp(chunk.data() + i, kEntryMagic, 4) != 0 &&
          std::memcmp(chunk.data() + i, kRemovalMagic, 4) != 0) {
        continue;
      }
      auto candidate = record_at(log, at + i, log_size);
      if (!candidate) return candidate.status();
      if (*candidate) {
        step.next = at + i;
        step.damaged = step.next - offset;
        return step;
      }
    }
    at += n;
  }
  step.next = log_size;
  step.damaged = log_size - offset;
  return step;
}

}  // namespace kcache::userlog
