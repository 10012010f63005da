// One user-tier database as a process holds it: its log open, and the
// index of each key's newest record, read from the hint and from the log
// past it; and the scan of a whole log that verify and compaction use.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "env/env.h"
#include "store/user/mapped_log.h"
#include "store/user/record_index.h"
#include "store/user/use_table.h"
#include "store/user/user_log.h"

namespace kcache::userlog {

using RecordMap = std::unordered_map<CacheKey, HintRecord, KeyHash>;

// One database, open: its log held open and what the hint says of it.
struct Db {
  std::unique_ptr<File> log;
  std::unique_ptr<File> hint;  // null when the hint did not match the log
  bool writable = false;
  userlog::Generation generation{};
  mutable SharedMutex mutex;  // guards the members below that say so
  // key -> its newest record, a removal included (so that an older record
  // met later, in a hint read after a scan, does not bring it back)
  RecordIndex newest GUARDED_BY(mutex);
  std::uint64_t hint_read GUARDED_BY(mutex) = userlog::kHeaderSize;  // bytes of the hint applied
  // How far the hint file covers the log: writers hint what lies past it.
  std::uint64_t hinted_end GUARDED_BY(mutex) = userlog::kHeaderSize;
  // How far this process has read the log (past the hint, on a miss).
  std::uint64_t read_end GUARDED_BY(mutex) = userlog::kHeaderSize;
  // Whether a record that failed its checks had the whole log read to see
  // whether the hint misplaced it (done once per open database).
  bool checked_against_log GUARDED_BY(mutex) = false;

  // Hits served from a mapping of the log (store/user/mapped_log.h).
  MappedLog mapped;

  // Its use table (store/user/use_table.h), opened on the first hit. A
  // retired table is replaced by the current one; every table opened is
  // kept until the database is closed, so a hit never meets a freed one.
  struct Uses {
    Mutex mutex;  // guards opening
    std::atomic<UseTable*> table{nullptr};
    std::vector<std::unique_ptr<UseTable>> opened GUARDED_BY(mutex);
    std::uint32_t tried_minute GUARDED_BY(mutex) = 0;  // the last minute opening was tried
  } uses;

  // The caller holds `mutex` exclusively (as for the two below).
  void apply(const HintRecord& record) REQUIRES(mutex) {
    newest.apply(record);
    read_end = std::max(read_end, record.end());
  }
  // Replaces what the index holds with the live records of a scan that
  // read the log up to `end`.
  void index_scan(const RecordMap& live, std::uint64_t end) REQUIRES(mutex) {
    std::vector<HintRecord> records;
    records.reserve(live.size());
    for (const auto& [key, record] : live) records.push_back(record);
    newest.clear();
    newest.apply_all(records);
    read_end = end;
  }
  // apply(), for records the hint file holds.
  void apply_hinted(std::span<const HintRecord> records) REQUIRES(mutex) {
    newest.apply_all(records);
    for (const HintRecord& record : records) {
      read_end = std::max(read_end, record.end());
      hinted_end = std::max(hinted_end, record.end());
    }
  }
  std::optional<HintRecord> find(const CacheKey& key) const {
    ReaderLock lock(mutex);
    const IndexedRecord* r = newest.find(key);
    if (r == nullptr || r->record.removal()) return std::nullopt;
    return r->record;
  }
  // find(), with what this process has learnt of the record: the two
  // fields a read moves, and what the index held of them when looked up.
  struct Found {
    HintRecord record;
    std::uint32_t checked_epoch = 0;
    std::uint32_t used_minute = 0;
    std::uint32_t looked_up_epoch = 0;
    std::uint32_t looked_up_minute = 0;
  };
  std::optional<Found> lookup(const CacheKey& key) const {
    ReaderLock lock(mutex);
    const IndexedRecord* r = newest.find(key);
    if (r == nullptr || r->record.removal()) return std::nullopt;
    const std::uint32_t epoch = std::atomic_ref(r->checked_epoch).load(std::memory_order_relaxed);
    const std::uint32_t minute = std::atomic_ref(r->used_minute).load(std::memory_order_relaxed);
    return Found{r->record, epoch, minute, epoch, minute};
  }
  // Keeps what a read learnt of `found` (the fields it moved since the
  // lookup), while its record is still its key's newest.
  void learnt(const Found& found) const {
    const bool checked = found.checked_epoch != found.looked_up_epoch;
    const bool used = found.used_minute != found.looked_up_minute;
    if (!checked && !used) return;
    ReaderLock lock(mutex);
    const IndexedRecord* r = newest.find(found.record.key);
    if (r == nullptr || r->record.offset != found.record.offset) return;
    if (checked) {
      std::atomic_ref(r->checked_epoch).store(found.checked_epoch, std::memory_order_relaxed);
    }
    if (used) {
      std::atomic_ref(r->used_minute).store(found.used_minute, std::memory_order_relaxed);
    }
  }
  // The newest records of the keys present, in log order.
  std::vector<HintRecord> records() const {
    ReaderLock lock(mutex);
    std::vector<HintRecord> out;
    out.reserve(newest.size());
    newest.for_each([&](const IndexedRecord& r) {
      if (!r.record.removal()) out.push_back(r.record);
    });
    std::sort(out.begin(), out.end(),
              [](const HintRecord& a, const HintRecord& b) { return a.offset < b.offset; });
    return out;
  }
  // Applies the hint records appended since the last call, up to the
  // first that fails its check (being written, or torn by a killed
  // writer). The caller holds `mutex` exclusively (as for the next one).
  void read_hint() REQUIRES(mutex);
  // Applies the records the log holds past what the hint said: appended by
  // a writer that was killed before its hint record, or hidden behind a
  // damaged hint record. Stops before damaged bytes (perhaps an append in
  // progress), which a writer deals with.
  void read_past_hint() REQUIRES(mutex);
  [[nodiscard]] std::size_t size() const {
    ReaderLock lock(mutex);
    std::size_t present = 0;
    newest.for_each([&](const IndexedRecord& r) { present += r.record.removal() ? 0 : 1; });
    return present;
  }
};

// What a scan of a whole log found.
struct LogScan {
  std::uint64_t size = 0;  // of the log when the scan began
  RecordMap live;
  std::uint64_t end = userlog::kHeaderSize;  // after the last valid record
  std::uint64_t entries = 0;                 // valid entry records
  std::vector<ScanStep> damaged;             // damaged bytes followed by valid records
  std::optional<ScanStep> torn_tail;         // damaged bytes that end the log
};

// Whether the hint file `hint` names the log of `generation` in its header.
bool hint_describes(const File& hint, const Generation& generation);

// Reads the whole of `log`: its valid records, the damaged bytes between
// them, and a torn tail.
Result<LogScan> scan_log(const File& log);

}  // namespace kcache::userlog
