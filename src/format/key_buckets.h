// Where a key lies in an array sorted by key, in one or two cache lines.
//
// Keys are digests, spread evenly: the top bits of a key name a bucket of
// about one key. A lookup reads the bucket's two bounds (adjacent, one
// line) and bisects the few keys between them, rather than bisecting the
// whole array: ~log2(n) dependent reads, each a cache miss when the array
// is cold, as it is between two module loads. Keys made to share their
// top bits (a crafted package) only make their bucket larger; it is still
// bisected.
#pragma once

#include <kcache/key.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kcache {

class KeyBuckets {
 public:
  // Buckets for the `count` keys `key_of(0) <= ... <= key_of(count - 1)`.
  template <class KeyOf>
  void build(std::size_t count, KeyOf key_of) {
    clear();
    if (count == 0 || count > UINT32_MAX) return;  // (then every lookup bisects the whole)
    // About one key a bucket; at most 2^24 buckets (64 MiB of bounds).
    const int bits = std::min(24, static_cast<int>(std::bit_width(count)));
    shift_ = 64 - bits;
    const std::size_t buckets = std::size_t{1} << bits;
    bounds_.assign(buckets + 1, static_cast<std::uint32_t>(count));
    std::size_t next = 0;  // the first bucket whose lower bound is not yet set
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t bucket = bucket_of(key_of(i));
      while (next <= bucket) bounds_[next++] = static_cast<std::uint32_t>(i);
    }
  }

  void clear() {
    bounds_.clear();
    shift_ = 64;
  }

  // [first, last): where `key` lies if it is there, within the array built
  // from (everywhere when nothing was built).
  [[nodiscard]] std::pair<std::size_t, std::size_t> range(const CacheKey& key,
                                                          std::size_t count) const {
    if (bounds_.empty()) return {0, count};
    const std::size_t bucket = bucket_of(key);
    return {bounds_[bucket], bounds_[bucket + 1]};
  }

  // The element of [first, last), the sorted array built from, whose key
  // (`key_of(element)`) is `key`; `last` when none is.
  template <class It, class KeyOf>
  [[nodiscard]] It find(It first, It last, const CacheKey& key, KeyOf key_of) const {
    const auto [from, to] = range(key, static_cast<std::size_t>(last - first));
    const It end = first + static_cast<std::ptrdiff_t>(to);
    const It it = std::lower_bound(first + static_cast<std::ptrdiff_t>(from), end, key,
                                   [&](const auto& e, const CacheKey& k) { return key_of(e) < k; });
    return it != end && key_of(*it) == key ? it : last;
  }

 private:
  [[nodiscard]] std::size_t bucket_of(const CacheKey& key) const {
    std::uint64_t top = 0;
    for (std::size_t i = 0; i < 8; ++i) top = (top << 8) | key.bytes()[i];
    return shift_ >= 64 ? 0 : static_cast<std::size_t>(top >> shift_);
  }

  std::vector<std::uint32_t> bounds_;  // bucket b's keys: [bounds_[b], bounds_[b + 1])
  int shift_ = 64;
};

}  // namespace kcache
