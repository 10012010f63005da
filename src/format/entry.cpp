#include "format/entry.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/hash.h"
#include "format/endian.h"

namespace kcache {
namespace {

constexpr std::uint8_t kMagic[4] = {'K', 'C', 'E', 'N'};
constexpr std::size_t kChecksumOffset = 72;
constexpr std::size_t kKeyEnd = 48;  // the key, then reserved zero bytes up to here

}  // namespace

Result<std::vector<std::uint8_t>> encode_entry(const Entry& entry, Compression compression) {
  const std::string metadata = encode_fields(entry.metadata);
  std::span<const std::uint8_t> payload = entry.payload();
  if (entry.material.size() > kMaxMaterialSize || metadata.size() > kMaxMetadataSize ||
      payload.size() > kMaxPayloadSize) {
    return Status::invalid_argument("entry too large to store");
  }

  std::vector<std::uint8_t> compressed;
  std::span<const std::uint8_t> stored = payload;
  Compression used = Compression::kNone;
  if (compression != Compression::kNone) {
    if (auto packed = compress(compression, payload); packed && packed->size() < payload.size()) {
      compressed = std::move(*packed);
      stored = compressed;
      used = compression;
    }
  }

  std::vector<std::uint8_t> out(kEntryHeaderSize + entry.material.size() + metadata.size() +
                                stored.size());
  std::uint8_t* h = out.data();
  std::memcpy(h, kMagic, 4);
  le::put_u16(h + 4, kEntryFormatVersion);
  h[6] = static_cast<std::uint8_t>(used);
  h[7] = 0;
  le::put_u64(h + 8, static_cast<std::uint64_t>(entry.created_unix));
  std::memcpy(h + 16, entry.key.bytes().data(), CacheKey::kSize);
  std::memset(h + 16 + CacheKey::kSize, 0, kKeyEnd - 16 - CacheKey::kSize);  // reserved
  le::put_u32(h + 48, static_cast<std::uint32_t>(entry.material.size()));
  le::put_u32(h + 52, static_cast<std::uint32_t>(metadata.size()));
  le::put_u32(h + 56, static_cast<std::uint32_t>(stored.size()));
  le::put_u32(h + 60, 0);
  le::put_u64(h + 64, payload.size());

  std::uint8_t* p = h + kEntryHeaderSize;
  std::memcpy(p, entry.material.data(), entry.material.size());
  p += entry.material.size();
  std::memcpy(p, metadata.data(), metadata.size());
  p += metadata.size();
  if (!stored.empty()) std::memcpy(p, stored.data(), stored.size());

  Checksummer checksum;
  checksum.update({h, kChecksumOffset});
  checksum.update({h + kEntryHeaderSize, out.size() - kEntryHeaderSize});
  Checksum128 digest = checksum.finish();
  std::memcpy(h + kChecksumOffset, digest.data(), digest.size());
  return out;
}

Result<std::uint64_t> entry_size(std::span<const std::uint8_t> header) {
  const std::uint8_t* h = header.data();
  if (header.size() < kEntryHeaderSize) return Status::corruption("entry shorter than its header");
  if (std::memcmp(h, kMagic, 4) != 0) return Status::corruption("not a kcache entry (bad magic)");
  if (le::get_u16(h + 4) != kEntryFormatVersion) {
    return Status::corruption("unknown entry format version " + std::to_string(le::get_u16(h + 4)));
  }
  const auto compression = static_cast<Compression>(h[6]);
  if (h[6] > static_cast<std::uint8_t>(Compression::kZstd) || h[7] != 0 ||
      le::get_u32(h + 60) != 0 ||
      std::any_of(h + 16 + CacheKey::kSize, h + kKeyEnd, [](std::uint8_t b) { return b != 0; })) {
    return Status::corruption("unknown entry flags");
  }
  const std::uint64_t material_size = le::get_u32(h + 48);
  const std::uint64_t metadata_size = le::get_u32(h + 52);
  const std::uint64_t stored_size = le::get_u32(h + 56);
  const std::uint64_t payload_size = le::get_u64(h + 64);
  if (material_size > kMaxMaterialSize || metadata_size > kMaxMetadataSize ||
      payload_size > kMaxPayloadSize ||
      (compression == Compression::kNone && stored_size != payload_size)) {
    return Status::corruption("entry sizes out of range");
  }
  return kEntryHeaderSize + material_size + metadata_size + stored_size;
}

Result<Entry> decode_entry(const ByteBuffer& bytes, const CacheKey* expected_key,
                           EntryCheck check) {
  const std::uint8_t* h = bytes.data.get();
  const std::size_t size = bytes.size;
  auto expected_size = entry_size(bytes.span());
  if (!expected_size) return expected_size.status();
  if (*expected_size != size) {
    return Status::corruption("entry size does not match its header (truncated or padded)");
  }
  const auto compression = static_cast<Compression>(h[6]);
  const std::uint64_t material_size = le::get_u32(h + 48);
  const std::uint64_t metadata_size = le::get_u32(h + 52);
  const std::uint64_t stored_size = le::get_u32(h + 56);
  const std::uint64_t payload_size = le::get_u64(h + 64);

  if (check == EntryCheck::kFull) {
    Checksummer checksum;
    checksum.update({h, kChecksumOffset});
    checksum.update({h + kEntryHeaderSize, size - kEntryHeaderSize});
    Checksum128 digest = checksum.finish();
    if (std::memcmp(digest.data(), h + kChecksumOffset, digest.size()) != 0) {
      return Status::corruption("entry checksum mismatch");
    }
  }

  Entry entry;
  CacheKey::Bytes key_bytes;
  std::memcpy(key_bytes.data(), h + 16, CacheKey::kSize);
  entry.key = CacheKey(key_bytes);
  if (expected_key != nullptr && entry.key != *expected_key) {
    return Status::corruption("entry is stored under another key");
  }
  entry.created_unix = static_cast<std::int64_t>(le::get_u64(h + 8));
  const char* text = reinterpret_cast<const char*>(h + kEntryHeaderSize);
  const std::string_view material(text, material_size);
  auto metadata = decode_fields(std::string_view(text + material_size, metadata_size));
  if (!metadata) return Status::corruption("entry metadata: " + metadata.status().message());
  entry.metadata = std::move(*metadata);

  const std::size_t stored_offset = kEntryHeaderSize + material_size + metadata_size;
  if (compression == Compression::kNone) {
    entry.material = SharedText(bytes.data, material);  // one buffer holds all
    entry.storage = bytes;
    entry.payload_offset = stored_offset;
    entry.payload_size = payload_size;
  } else {
    auto plain =
        decompress(compression, bytes.span().subspan(stored_offset, stored_size), payload_size);
    if (!plain) return Status::corruption("entry payload: " + plain.status().message());
    // The bytes read are not kept: the material is copied out of them.
    entry.material = std::string(material);
    entry.storage = std::move(*plain);
    entry.payload_offset = 0;
    entry.payload_size = payload_size;
  }
  return entry;
}

std::optional<std::uint64_t> compile_micros_of(const Fields& metadata) {
  for (const auto& [field, value] : metadata) {
    if (field != kCompileMicrosField) continue;
    std::uint64_t micros = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), micros);
    if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return micros;
  }
  return std::nullopt;
}

Entry owned_copy(const Entry& entry) {
  Entry out = entry;
  out.storage = ByteBuffer::copy_of(entry.storage.span());
  if (entry.material.inside(entry.storage.data)) {
    const auto* from = reinterpret_cast<const char*>(entry.storage.data.get());
    const auto* to = reinterpret_cast<const char*>(out.storage.data.get());
    out.material =
        SharedText(out.storage.data,
                   std::string_view(to + (entry.material.data() - from), entry.material.size()));
  }
  return out;
}

}  // namespace kcache
