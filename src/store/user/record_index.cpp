#include "store/user/record_index.h"

#include <algorithm>
#include <iterator>

namespace kcache::userlog {
namespace {

// Records waiting in the hash map before a merge, past an eighth of the
// array: a merge moves the whole array, so a process putting n entries one
// by one moves about 9n records in all.
constexpr std::size_t kMergeAfter = 64;

bool key_less(const IndexedRecord& a, const IndexedRecord& b) {
  return a.record.key < b.record.key;
}

// Keeps `record` in `held` when it is the newer of the two.
void keep_newer(IndexedRecord& held, const HintRecord& record) {
  if (held.record.offset < record.offset) held = record;
}

// The record of `key` in `sorted` (by key, with its `buckets`), or null;
// const as `sorted` is.
template <class Records>
auto* record_of(Records& sorted, const KeyBuckets& buckets, const CacheKey& key) {
  auto it = buckets.find(sorted.begin(), sorted.end(), key,
                         [](const IndexedRecord& r) -> const CacheKey& { return r.record.key; });
  return it != sorted.end() ? &*it : nullptr;
}

}  // namespace

const IndexedRecord* RecordIndex::find(const CacheKey& key) const {
  if (!recent_.empty()) {
    if (auto it = recent_.find(key); it != recent_.end()) return &it->second;
  }
  return record_of(sorted_, buckets_, key);
}

void RecordIndex::apply(const HintRecord& record) {
  if (IndexedRecord* held = record_of(sorted_, buckets_, record.key)) {
    keep_newer(*held, record);
    return;
  }
  auto [it, added] = recent_.try_emplace(record.key, record);
  if (!added) keep_newer(it->second, record);
  if (recent_.size() > kMergeAfter + sorted_.size() / 8) merge({});
}

void RecordIndex::apply_all(std::span<const HintRecord> records) {
  if (records.size() <= kMergeAfter + sorted_.size() / 8) {
    for (const HintRecord& record : records) apply(record);
    return;
  }
  std::vector<IndexedRecord> batch;
  for (const HintRecord& record : records) {
    if (IndexedRecord* held = record_of(sorted_, buckets_, record.key)) {
      keep_newer(*held, record);
    } else {
      batch.emplace_back(record);
    }
  }
  merge(std::move(batch));
}

void RecordIndex::clear() {
  sorted_.clear();
  buckets_.clear();
  recent_.clear();
}

void RecordIndex::merge(std::vector<IndexedRecord> batch) {
  batch.reserve(batch.size() + recent_.size());
  for (auto& [key, record] : recent_) batch.push_back(record);
  recent_.clear();
  if (batch.empty()) return;
  // By key, each key's newest first: the one unique keeps.
  std::sort(batch.begin(), batch.end(), [](const IndexedRecord& a, const IndexedRecord& b) {
    return a.record.key < b.record.key ||
           (a.record.key == b.record.key && a.record.offset > b.record.offset);
  });
  batch.erase(std::unique(batch.begin(), batch.end(),
                          [](const IndexedRecord& a, const IndexedRecord& b) {
                            return a.record.key == b.record.key;
                          }),
              batch.end());
  std::vector<IndexedRecord> merged;
  merged.reserve(sorted_.size() + batch.size());
  std::merge(sorted_.begin(), sorted_.end(), batch.begin(), batch.end(), std::back_inserter(merged),
             key_less);
  sorted_ = std::move(merged);
  buckets_.build(sorted_.size(),
                 [&](std::size_t i) -> const CacheKey& { return sorted_[i].record.key; });
}

}  // namespace kcache::userlog
