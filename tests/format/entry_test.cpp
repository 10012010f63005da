#include "format/entry.h"

#include <gtest/gtest.h>

#include <kcache/compiler.h>

#include <random>
#include <string_view>

#include "base/hash.h"

namespace kcache {
namespace {

Entry make_entry(std::size_t payload_size, std::uint32_t seed = 1) {
  Entry entry;
  entry.material = "kcache.key 1\nbackend fake\nsource sha256:00\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.created_unix = 1700000000;
  entry.metadata = {{"format", "fake"}, {"note", "two\nlines"}};
  std::vector<std::uint8_t> payload(payload_size);
  std::mt19937 random(seed);
  // Compressible but not trivial: a small alphabet.
  for (auto& b : payload) b = static_cast<std::uint8_t>("ABCDEFGH"[random() % 8]);
  entry.storage = ByteBuffer::copy_of(payload);
  entry.payload_size = payload.size();
  return entry;
}

ByteBuffer encoded(const Entry& entry, Compression compression = Compression::kNone) {
  auto bytes = encode_entry(entry, compression);
  EXPECT_TRUE(bytes.is_ok());
  return ByteBuffer::copy_of(*bytes);
}

void expect_same(const Entry& a, const Entry& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.created_unix, b.created_unix);
  EXPECT_EQ(a.material, b.material);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.payload().size(), b.payload().size());
  EXPECT_TRUE(std::equal(a.payload().begin(), a.payload().end(), b.payload().begin()));
}

TEST(EntryTest, RoundTrip) {
  for (std::size_t size : {0u, 1u, 100u, 65536u}) {
    Entry entry = make_entry(size);
    auto decoded = decode_entry(encoded(entry), &entry.key);
    ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
    expect_same(entry, *decoded);
  }
}

// A decoded entry's material and payload are views into the bytes read,
// which they keep alive: nothing is copied on a hit.
TEST(EntryTest, DecodedEntrySharesTheBytes) {
  Entry entry = make_entry(100);
  ByteBuffer bytes = encoded(entry);
  const std::uint8_t* begin = bytes.data.get();
  auto decoded = decode_entry(bytes, &entry.key);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(decoded->material.data()),
            begin + kEntryHeaderSize);
  EXPECT_EQ(decoded->payload().data() + decoded->payload().size(), begin + bytes.size);
  EXPECT_TRUE(decoded->material.inside(bytes.data));
  bytes = ByteBuffer();
  expect_same(entry, *decoded);
}

TEST(EntryTest, ZstdRoundTripIsSmaller) {
  if (!compression_available(Compression::kZstd)) GTEST_SKIP() << "built without zstd";
  Entry entry = make_entry(65536);
  ByteBuffer plain = encoded(entry);
  ByteBuffer packed = encoded(entry, Compression::kZstd);
  EXPECT_LT(packed.size, plain.size / 2);
  auto decoded = decode_entry(packed, &entry.key);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  expect_same(entry, *decoded);
  // The compressed bytes are not kept alive by the material.
  EXPECT_FALSE(decoded->material.inside(packed.data));
  EXPECT_FALSE(decoded->material.inside(decoded->storage.data));
}

TEST(EntryTest, GoldenHeaderLayout) {
  Entry entry = make_entry(3);
  ByteBuffer bytes = encoded(entry);
  const std::uint8_t* h = bytes.data.get();
  ASSERT_EQ(bytes.size,
            kEntryHeaderSize + entry.material.size() + encode_fields(entry.metadata).size() + 3);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(h), 4), "KCEN");
  EXPECT_EQ(h[4], kEntryFormatVersion);  // format version, little-endian
  EXPECT_EQ(h[5], 0);
  EXPECT_EQ(h[6], 0);  // no compression
  EXPECT_EQ(std::equal(entry.key.bytes().begin(), entry.key.bytes().end(), h + 16), true);
  EXPECT_EQ(h[48], entry.material.size());
  EXPECT_EQ(h[56], 3);  // stored payload size
  EXPECT_EQ(h[64], 3);  // payload size
}

// Every single-bit flip anywhere in the entry is detected.
TEST(EntryTest, EveryBitFlipIsCorruption) {
  Entry entry = make_entry(64);
  ByteBuffer good = encoded(entry);
  for (std::size_t byte = 0; byte < good.size; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      ByteBuffer bad = ByteBuffer::copy_of(good.span());
      bad.data[byte] ^= static_cast<std::uint8_t>(1u << bit);
      auto decoded = decode_entry(bad, &entry.key);
      ASSERT_FALSE(decoded.is_ok()) << "flip at byte " << byte << " bit " << bit;
      EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
    }
  }
}

TEST(EntryTest, EveryTruncationIsCorruption) {
  Entry entry = make_entry(200);
  ByteBuffer good = encoded(entry);
  for (std::size_t length = 0; length < good.size; ++length) {
    auto decoded = decode_entry(ByteBuffer::copy_of(good.span().subspan(0, length)), &entry.key);
    ASSERT_FALSE(decoded.is_ok()) << "length " << length;
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  }
  std::vector<std::uint8_t> padded(good.span().begin(), good.span().end());
  padded.push_back(0);
  EXPECT_FALSE(decode_entry(ByteBuffer::copy_of(padded), &entry.key).is_ok());
}

TEST(EntryTest, ZeroedPagesAndGarbageAreCorruption) {
  Entry entry = make_entry(10000);
  ByteBuffer bad = ByteBuffer::copy_of(encoded(entry).span());
  std::fill(bad.data.get() + 4096, bad.data.get() + 8192, 0);
  EXPECT_EQ(decode_entry(bad, &entry.key).status().code(), StatusCode::kCorruption);

  std::vector<std::uint8_t> zeros(5000, 0);
  EXPECT_EQ(decode_entry(ByteBuffer::copy_of(zeros)).status().code(), StatusCode::kCorruption);
  std::string sqlite = "SQLite format 3";
  sqlite.resize(4096, '\0');
  EXPECT_EQ(decode_entry(ByteBuffer::copy_of(
                             {reinterpret_cast<const std::uint8_t*>(sqlite.data()), sqlite.size()}))
                .status()
                .code(),
            StatusCode::kCorruption);
}

TEST(EntryTest, AnotherKeyIsCorruption) {
  Entry entry = make_entry(10);
  CacheKey other(xxh3_128(std::string_view("other")));
  auto decoded = decode_entry(encoded(entry), &other);
  ASSERT_FALSE(decoded.is_ok());
  EXPECT_NE(decoded.status().message().find("another key"), std::string::npos);
}

TEST(EntryTest, CorruptZstdPayloadWithValidChecksumIsStillCorruption) {
  if (!compression_available(Compression::kZstd)) GTEST_SKIP() << "built without zstd";
  // A header that claims a different uncompressed size than zstd yields.
  Entry entry = make_entry(65536);
  ByteBuffer packed = ByteBuffer::copy_of(encoded(entry, Compression::kZstd).span());
  packed.data[64] ^= 1;  // payload size field
  // Recompute the checksum so only the size lie remains.
  Checksummer checksum;
  checksum.update(packed.span().subspan(0, 72));
  checksum.update(packed.span().subspan(kEntryHeaderSize));
  auto digest = checksum.finish();
  std::copy(digest.begin(), digest.end(), packed.data.get() + 72);
  EXPECT_EQ(decode_entry(packed, &entry.key).status().code(), StatusCode::kCorruption);
}

// The metadata field names are in every entry on disk and in every
// package: renaming a constant must not rename a stored field.
TEST(EntryTest, MetadataFieldNamesAreTheStoredOnes) {
  EXPECT_EQ(std::string_view(kFormatField), "format");
  EXPECT_EQ(std::string_view(kLoweredField), "lowered");
  EXPECT_EQ(std::string_view(kWarmedField), "warmed");
  EXPECT_EQ(std::string_view(kBuildLogField), "build_log");
  EXPECT_EQ(std::string_view(kRefinedField), "refined");
  EXPECT_EQ(kCompileMicrosField, "compile_us");
}

}  // namespace
}  // namespace kcache
