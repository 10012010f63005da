// decode_entry on arbitrary bytes (docs/formats.md §1), as stored and with
// the checksum recomputed so that mutations reach the code behind it.
//
// Invariants: a failure is kCorruption (kNotSupported only for zstd in a
// build without it); a decoded entry agrees with its header, is refused
// under another key and once truncated, and re-encodes to the same bytes
// (uncompressed) or to an entry that decodes equal (either compression).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "format/compression.h"
#include "format/entry.h"
#include "fuzz_support.h"

namespace kcache::fuzz {
namespace {

// Re-encoding a huge decompressed payload (a small zstd frame can expand
// to the 1 GiB limit) would only slow the run down.
constexpr std::size_t kMaxRoundTripPayload = 1u << 20;

bool same_entry(const Entry& a, const Entry& b) {
  auto pa = a.payload();
  auto pb = b.payload();
  return a.key == b.key && a.created_unix == b.created_unix && a.material == b.material &&
         a.metadata == b.metadata && pa.size() == pb.size() &&
         (pa.empty() || std::memcmp(pa.data(), pb.data(), pa.size()) == 0);
}

bool failure_is_expected(const Status& status) {
  return status.code() == StatusCode::kCorruption ||
         (status.code() == StatusCode::kNotSupported && !compression_available(Compression::kZstd));
}

void check_reencoding(const Entry& entry, Compression compression,
                      std::span<const std::uint8_t> original) {
  auto encoded = encode_entry(entry, compression);
  KCACHE_FUZZ_CHECK(encoded.is_ok(),
                    "a decoded entry must encode: " + encoded.status().to_string());
  if (compression == Compression::kNone && original[6] == 0) {
    // The format is canonical: the same entry is the same bytes.
    KCACHE_FUZZ_CHECK(encoded->size() == original.size() &&
                          std::memcmp(encoded->data(), original.data(), original.size()) == 0,
                      "re-encoding an uncompressed entry changed its bytes");
  }
  ByteBuffer again = exact_buffer(*encoded);
  auto decoded = decode_entry(again, &entry.key);
  KCACHE_FUZZ_CHECK(decoded.is_ok(),
                    "a re-encoded entry must decode: " + decoded.status().to_string());
  KCACHE_FUZZ_CHECK(same_entry(entry, *decoded), "the re-encoded entry decodes differently");
}

void check_decoder(std::span<const std::uint8_t> bytes) {
  ByteBuffer buffer = exact_buffer(bytes);
  auto entry = decode_entry(buffer);
  if (!entry) {
    KCACHE_FUZZ_CHECK(failure_is_expected(entry.status()), entry.status().to_string());
    // Giving the key to look for never turns a refusal into an entry.
    if (bytes.size() >= 48) {
      CacheKey::Bytes stored;
      std::memcpy(stored.data(), bytes.data() + 16, stored.size());
      CacheKey key(stored);
      KCACHE_FUZZ_CHECK(!decode_entry(buffer, &key).is_ok(),
                        "refused without a key, taken with one");
    }
    return;
  }

  // It agrees with its header.
  CacheKey::Bytes stored;
  std::memcpy(stored.data(), bytes.data() + 16, stored.size());
  KCACHE_FUZZ_CHECK(entry->key == CacheKey(stored), "decoded key differs from the header's");
  const std::uint32_t material_size = le::get_u32(bytes.data() + 48);
  KCACHE_FUZZ_CHECK(
      entry->material.size() == material_size &&
          std::memcmp(entry->material.data(), bytes.data() + kEntryHeaderSize, material_size) == 0,
      "material differs from the stored bytes");
  KCACHE_FUZZ_CHECK(entry->payload_size == le::get_u64(bytes.data() + 64),
                    "payload size differs from the header's");
  KCACHE_FUZZ_CHECK(entry->payload_offset + entry->payload_size <= entry->storage.size &&
                        entry->payload_offset <= entry->storage.size,
                    "payload lies outside its storage");
  KCACHE_FUZZ_CHECK(entry->created_unix == static_cast<std::int64_t>(le::get_u64(bytes.data() + 8)),
                    "creation time differs from the header's");

  // Under its own key it decodes the same; under any other it is refused.
  auto same = decode_entry(buffer, &entry->key);
  KCACHE_FUZZ_CHECK(same.is_ok() && same_entry(*entry, *same), "refused under its own key");
  CacheKey::Bytes other_bytes = stored;
  other_bytes[CacheKey::kSize - 1] ^= 1;
  CacheKey other(other_bytes);
  auto wrong = decode_entry(buffer, &other);
  KCACHE_FUZZ_CHECK(!wrong.is_ok() && wrong.status().code() == StatusCode::kCorruption,
                    "accepted under another key");

  // A truncated copy is refused, even with its checksum recomputed.
  std::vector<std::uint8_t> shorter(bytes.begin(), bytes.end() - 1);
  KCACHE_FUZZ_CHECK(!decode_entry(exact_buffer(shorter)).is_ok(), "a truncated entry decoded");
  if (reseal_entry(shorter)) {
    KCACHE_FUZZ_CHECK(!decode_entry(exact_buffer(shorter)).is_ok(),
                      "a truncated, resealed entry decoded");
  }

  if (entry->payload_size <= kMaxRoundTripPayload) {
    check_reencoding(*entry, Compression::kNone, bytes);
    if (compression_available(Compression::kZstd))
      check_reencoding(*entry, Compression::kZstd, bytes);
  }
}

}  // namespace
}  // namespace kcache::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::fuzz;
  std::span<const std::uint8_t> input(data, size);
  check_decoder(input);
  std::vector<std::uint8_t> sealed(input.begin(), input.end());
  if (reseal_entry(sealed)) check_decoder(sealed);
  return 0;
}
