#include "store/user/use_tracker.h"

#include <optional>
#include <vector>

#include "base/mutex.h"

namespace kcache::userlog {

void UseTracker::record_use(const std::string& name, Db& db, Db::Found& found) {
  if (!db.writable) return;
  const std::uint32_t now = minute_of(folder_.env.now_unix());
  // Minutes only grow in the table: one this process put there stands.
  if (found.used_minute >= now) return;
  UseTable* table = db.uses.table.load(std::memory_order_acquire);
  if (table == nullptr || table->retired()) table = use_table(name, db, now, /*force=*/false);
  if (table == nullptr) return;
  table->touch(found.record.key, now);
  found.used_minute = now;
}

UseTable* UseTracker::use_table(const std::string& name, Db& db, std::uint32_t now, bool force) {
  MutexLock lock(db.uses.mutex);
  UseTable* table = db.uses.table.load(std::memory_order_relaxed);
  if (table != nullptr && !table->retired()) return table;
  if (!force && db.uses.tried_minute == now) return table;
  db.uses.tried_minute = now;
  const std::string path = folder_.use_path(name);
  auto file = folder_.env.open_file(path, OpenMode::kReadWrite);
  if (!file || !folder_.opened_own_file(path, **file).is_ok()) return table;
  auto opened = UseTable::open(std::move(*file), path);
  if (!opened) {
    folder_.log.debug("UserDb", opened.status().message());
    return table;
  }
  table = opened->get();
  db.uses.opened.push_back(std::move(*opened));
  db.uses.table.store(table, std::memory_order_release);
  return table;
}

void UseTracker::stamp_use(const std::string& name, Db& db, const CacheKey& key) {
  const std::uint32_t now = minute_of(folder_.env.now_unix());
  UseTable* table = use_table(name, db, now, /*force=*/true);
  std::size_t keys = 0;
  {
    ReaderLock lock(db.mutex);
    keys = db.newest.size();
  }
  if (table == nullptr || table->too_full_for(keys)) {
    // Made anew, twice as large, with what the old one knew.
    std::vector<Use> uses;
    {
      ReaderLock lock(db.mutex);
      uses.reserve(db.newest.size());
      db.newest.for_each([&](const IndexedRecord& r) {
        if (r.record.removal()) return;
        if (auto minute = table ? table->last_use(r.record.key) : std::nullopt) {
          uses.push_back({r.record.key, *minute});
        }
      });
    }
    const std::uint32_t made = table ? table->made() : now;
    const std::string path = folder_.use_path(name);
    if (Status s = UseTable::write(folder_.env, path, db.generation, keys + 1, uses, made,
                                   folder_.file_mode());
        !s.is_ok()) {
      folder_.log.debug("UserDb", "cannot write " + path + ": " + s.message());
      return;
    }
    if (table != nullptr) table->retire();
    table = use_table(name, db, now, /*force=*/true);
  }
  if (table != nullptr) table->touch(key, now);
}

}  // namespace kcache::userlog
