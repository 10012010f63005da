#include "store/user/record_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "base/hash.h"

namespace kcache::userlog {
namespace {

CacheKey key_numbered(int i) { return CacheKey(xxh3_128("key " + std::to_string(i))); }

HintRecord record(int key, std::uint64_t offset, std::uint32_t size = 100) {
  return {key_numbered(key), offset, size};
}

// Each key's record as the index holds it, through find and through for_each.
void expect_holds(const RecordIndex& index, const std::map<int, HintRecord>& expected) {
  EXPECT_EQ(index.size(), expected.size());
  for (const auto& [key, want] : expected) {
    const IndexedRecord* got = index.find(want.key);
    ASSERT_NE(got, nullptr) << "key " << key;
    EXPECT_EQ(got->record.offset, want.offset) << "key " << key;
    EXPECT_EQ(got->record.size, want.size) << "key " << key;
  }
  std::size_t visited = 0;
  index.for_each([&](const IndexedRecord&) { ++visited; });
  EXPECT_EQ(visited, expected.size());
}

TEST(RecordIndexTest, EachKeyKeepsItsNewestRecordWhateverTheOrder) {
  RecordIndex index;
  index.apply(record(1, 500));
  index.apply(record(1, 100));  // older: ignored
  index.apply(record(2, 200));
  index.apply(record(2, 900, 0));  // a newer removal replaces it
  expect_holds(index, {{1, record(1, 500)}, {2, record(2, 900, 0)}});
  EXPECT_EQ(index.find(key_numbered(3)), nullptr);
}

TEST(RecordIndexTest, BatchesSingleAppliesAndMergesAgreeWithAPlainMap) {
  // Enough keys that single applies are merged into the sorted array many
  // times, then batches of old and new records over keys already sorted,
  // still waiting, and new.
  std::mt19937_64 random(7);
  RecordIndex index;
  std::map<int, HintRecord> expected;
  const auto apply_expected = [&](const HintRecord& r, int key) {
    auto [it, added] = expected.try_emplace(key, r);
    if (!added && it->second.offset < r.offset) it->second = r;
  };
  std::uint64_t offset = 64;
  for (int i = 0; i < 3000; ++i) {
    const int key = static_cast<int>(random() % 1000);
    const std::uint64_t at = random() % 4 == 0 ? random() % offset : offset += 128;
    // One size per offset: two records at one offset are one record.
    const HintRecord r = record(key, at, at % 7 == 0 ? 0 : 100);
    index.apply(r);
    apply_expected(r, key);
  }
  expect_holds(index, expected);
  for (int round = 0; round < 3; ++round) {
    std::vector<HintRecord> batch;
    for (int i = 0; i < 700; ++i) {
      const int key = static_cast<int>(random() % 1500);
      const std::uint64_t at = random() % 3 == 0 ? random() % offset : offset += 128;
      batch.push_back(record(key, at));
      apply_expected(batch.back(), key);
    }
    index.apply_all(batch);
    expect_holds(index, expected);
  }
  index.apply_all({});
  expect_holds(index, expected);
}

TEST(RecordIndexTest, ABatchWithOneKeyManyTimesKeepsItsNewest) {
  RecordIndex index;
  std::vector<HintRecord> batch;
  for (int i = 0; i < 200; ++i) batch.push_back(record(i % 3, 1000 + (i * 37) % 200 * 8));
  index.apply_all(batch);
  std::map<int, HintRecord> expected;
  for (const HintRecord& r : batch) {
    for (int key = 0; key < 3; ++key) {
      if (r.key != key_numbered(key)) continue;
      auto [it, added] = expected.try_emplace(key, r);
      if (!added && it->second.offset < r.offset) it->second = r;
    }
  }
  expect_holds(index, expected);
}

TEST(RecordIndexTest, WhatWasLearntOfARecordGoesWhenANewerOneTakesItsPlace) {
  RecordIndex index;
  std::vector<HintRecord> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(record(i, 64 + i * 128));
  index.apply_all(batch);            // sorted
  index.apply(record(500, 99'000));  // waiting beside it
  for (int key : {7, 500}) {
    const IndexedRecord* r = index.find(key_numbered(key));
    ASSERT_NE(r, nullptr);
    r->checked_epoch = 3;
    r->used_minute = 1234;
  }
  index.apply(record(7, 50));    // older: what was learnt stays
  index.apply(record(500, 10));  // older: likewise
  EXPECT_EQ(index.find(key_numbered(7))->checked_epoch, 3u);
  EXPECT_EQ(index.find(key_numbered(500))->used_minute, 1234u);
  index.apply(record(7, 100'000));  // newer
  index.apply(record(500, 100'128));
  for (int key : {7, 500}) {
    EXPECT_EQ(index.find(key_numbered(key))->checked_epoch, 0u);
    EXPECT_EQ(index.find(key_numbered(key))->used_minute, 0u);
  }
}

TEST(RecordIndexTest, ClearEmptiesBothParts) {
  RecordIndex index;
  std::vector<HintRecord> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(record(i, 64 + i * 128));
  index.apply_all(batch);
  index.apply(record(1000, 1));
  index.clear();
  expect_holds(index, {});
  EXPECT_EQ(index.find(key_numbered(1)), nullptr);
  EXPECT_EQ(index.find(key_numbered(1000)), nullptr);
}

}  // namespace
}  // namespace kcache::userlog
