#include "format/key_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace kcache {
namespace {

CacheKey key_of_bytes(std::mt19937_64& random, std::uint8_t first, int fixed_bytes) {
  CacheKey::Bytes bytes{};
  for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
  for (int i = 0; i < fixed_bytes; ++i) bytes[static_cast<std::size_t>(i)] = first;
  return CacheKey(bytes);
}

// Where `key` is in `keys` (sorted) when looked up through `buckets`, as
// the readers look: bisecting the range the buckets give.
std::optional<std::size_t> find(const std::vector<CacheKey>& keys, const KeyBuckets& buckets,
                                const CacheKey& key) {
  const auto [first, last] = buckets.range(key, keys.size());
  EXPECT_LE(first, last);
  EXPECT_LE(last, keys.size());
  auto end = keys.begin() + static_cast<std::ptrdiff_t>(last);
  auto it = std::lower_bound(keys.begin() + static_cast<std::ptrdiff_t>(first), end, key);
  if (it == end || *it != key) return std::nullopt;
  return static_cast<std::size_t>(it - keys.begin());
}

// Every key present is found at its place, and keys absent are not found,
// for spread keys, keys that share their top bytes (a crafted package) and
// the extremes.
void check(std::vector<CacheKey> keys, std::mt19937_64& random) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  KeyBuckets buckets;
  buckets.build(keys.size(), [&](std::size_t i) -> const CacheKey& { return keys[i]; });
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(find(keys, buckets, keys[i]), i) << keys[i].hex();
  }
  for (int i = 0; i < 2000; ++i) {
    const CacheKey probe = key_of_bytes(random, 0, 0);
    const bool present = std::binary_search(keys.begin(), keys.end(), probe);
    ASSERT_EQ(find(keys, buckets, probe).has_value(), present);
  }
}

TEST(KeyBuckets, FindsEveryKeyAndNoOther) {
  std::mt19937_64 random(7);
  for (std::size_t count : {0u, 1u, 2u, 3u, 17u, 1000u, 4096u, 5000u}) {
    std::vector<CacheKey> keys;
    for (std::size_t i = 0; i < count; ++i) keys.push_back(key_of_bytes(random, 0, 0));
    check(keys, random);
  }
}

TEST(KeyBuckets, KeysSharingTheirTopBitsAndTheExtremes) {
  std::mt19937_64 random(11);
  std::vector<CacheKey> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(key_of_bytes(random, 0xab, 8));  // one bucket
  for (int i = 0; i < 300; ++i) keys.push_back(key_of_bytes(random, 0, 0));
  keys.push_back(CacheKey(CacheKey::Bytes{}));  // all zero
  CacheKey::Bytes ones;
  ones.fill(0xff);
  keys.push_back(CacheKey(ones));
  check(keys, random);
  // A probe that shares the crafted prefix but is absent.
  std::sort(keys.begin(), keys.end());
  KeyBuckets buckets;
  buckets.build(keys.size(), [&](std::size_t i) -> const CacheKey& { return keys[i]; });
  EXPECT_FALSE(find(keys, buckets, key_of_bytes(random, 0xab, 8)).has_value());
  EXPECT_TRUE(find(keys, buckets, CacheKey(ones)).has_value());
}

TEST(KeyBuckets, UnbuiltOrClearedSearchesEverything) {
  KeyBuckets buckets;
  std::mt19937_64 random(3);
  EXPECT_EQ(buckets.range(key_of_bytes(random, 0, 0), 42),
            std::make_pair(std::size_t{0}, std::size_t{42}));
  std::vector<CacheKey> keys{key_of_bytes(random, 0, 0)};
  buckets.build(1, [&](std::size_t i) -> const CacheKey& { return keys[i]; });
  buckets.clear();
  EXPECT_EQ(buckets.range(keys[0], 5), std::make_pair(std::size_t{0}, std::size_t{5}));
}

}  // namespace
}  // namespace kcache
