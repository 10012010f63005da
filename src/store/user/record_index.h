// The index of an open user-tier database: each key's newest record (a
// removal included), with what this process has learnt of it since.
//
// Most of it is one array sorted by key, searched as the system tier
// searches a package (docs/design.md §3.7, "The user tier's index"): no
// allocation per key, and a lookup that touches a few lines of one array
// rather than a bucket and two list nodes scattered over the heap. Records
// applied one at a time since the last merge (a put, a record read past
// the hint) wait in a small hash map beside it, merged in once it holds
// more than an eighth of the array; a batch (a hint read whole, a scan) is
// sorted and merged at once.
//
// Not thread-safe: the database's shared mutex guards it; only the two
// learnt fields of IndexedRecord are written under the shared lock, through
// std::atomic_ref.
#pragma once

#include <kcache/key.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <unordered_map>
#include <vector>

#include "format/key_buckets.h"
#include "store/user/user_log.h"

namespace kcache::userlog {

struct KeyHash {
  std::size_t operator()(const CacheKey& key) const {
    std::size_t h;
    std::memcpy(&h, key.bytes().data(), sizeof h);
    return h;
  }
};

// A key's newest record as an open database indexes it, with what this
// process has learnt of it since (both forgotten when a newer record takes
// its place). A repeated hit finds all it needs on the one record: no other
// table is looked up, and the use table is written once a minute at most.
// A member, not a base: a base's tail padding could hold the learnt fields,
// and copying the record out would then read them while a hit writes them.
struct IndexedRecord {
  IndexedRecord(const HintRecord& of) : record(of) {}  // NOLINT: implicit
  HintRecord record;
  // The MappedLog epoch in which its bytes last passed the full check; 0: never.
  mutable std::uint32_t checked_epoch = 0;
  // The minute its use was last put in the use table by this process; 0: never.
  mutable std::uint32_t used_minute = 0;
};

class RecordIndex {
 public:
  // Keeps `record` as its key's newest unless the index holds a newer one
  // (one further into the log).
  void apply(const HintRecord& record);
  // apply() of each, at once.
  void apply_all(std::span<const HintRecord> records);

  // The newest record of `key`, a removal included; null when none. Valid
  // until the index is next changed.
  [[nodiscard]] const IndexedRecord* find(const CacheKey& key) const;

  // Keys indexed, removals included.
  [[nodiscard]] std::size_t size() const { return sorted_.size() + recent_.size(); }
  void clear();

  // Calls `visit` with each record, in no particular order.
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const IndexedRecord& record : sorted_) visit(record);
    for (const auto& [key, record] : recent_) visit(record);
  }

 private:
  // Merges `recent_` and `batch` (keys not in `sorted_`) into `sorted_`.
  void merge(std::vector<IndexedRecord> batch);

  std::vector<IndexedRecord> sorted_;  // by key; no key in recent_
  KeyBuckets buckets_;                 // of sorted_
  std::unordered_map<CacheKey, IndexedRecord, KeyHash> recent_;
};

}  // namespace kcache::userlog
