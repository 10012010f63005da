#include "store/user/appender.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "format/entry.h"
#include "store/user/log_compaction.h"

namespace kcache::userlog {

Status Appender::append(const std::string& name, const CacheKey& key,
                        std::span<const std::uint8_t> bytes, bool removal) {
  if (Status s = trust_.ensure_dir(folder_.options.dir); !s.is_ok()) return s;
  auto lock = folder_.append_lock(name, kAppendWait);
  if (!lock) return lock.status();
  auto db = db_for_append(name);
  if (!db) return db.status();
  return append_locked(name, **db, key, bytes, removal);
}

Status Appender::append_locked(const std::string& name, Db& d, const CacheKey& key,
                               std::span<const std::uint8_t> bytes, bool removal) {
  auto size = d.log->size();
  if (!size) return size.status();
  const std::uint64_t at = padded(*size);
  std::uint64_t hint_at = 0;
  {
    ReaderLock read(d.mutex);
    hint_at = d.hint_read;
  }
  // Its use first: an eviction pass may look at the log as soon as the
  // record is there, and must not take a new entry for one never used.
  if (!removal) uses_.stamp_use(name, d, key);
  static constexpr std::uint8_t kPadding[kAlignment] = {};
  const std::uint64_t pad = padded(bytes.size()) - bytes.size();
  Status s = d.log->write_at(at, bytes);
  if (s.is_ok() && pad > 0) s = d.log->write_at(at + bytes.size(), {kPadding, pad});
  if (s.is_ok() && folder_.options.sync) s = d.log->sync();
  if (!s.is_ok()) {
    (void)d.log->truncate(at);  // nothing half-written stays for a reader
    return s;
  }
  const HintRecord record{key, at, removal ? 0 : static_cast<std::uint32_t>(bytes.size())};
  // The entry is committed: a hint record that cannot be written is
  // written by the next append (which reads the log past the hint).
  Status hinted = d.hint->write_at(hint_at, encode_hint(record));
  if (!hinted.is_ok()) {
    folder_.log.debug("UserDb",
                      "cannot append to " + folder_.hint_path(name) + ": " + hinted.message());
  }
  {
    WriterLock write(d.mutex);
    if (hinted.is_ok()) {
      d.apply_hinted({&record, 1});
      d.hint_read = hint_at + kHintRecordSize;
    } else {
      d.apply(record);
    }
  }
  return Status::ok();
}

Result<std::shared_ptr<Db>> Appender::db_for_append(const std::string& name) {
  std::shared_ptr<Db> db = dbs_.find_open(name);
  if (db == nullptr || dbs_.replaced(name, *db) || !db->writable || !db->hint) {
    dbs_.forget(name);
    auto opened = open_for_append(name);
    if (!opened) return opened.status();
    db = std::move(*opened);
    dbs_.keep(name, db);
  }
  // Once per process and database, under the append lock: what killed
  // compactions left (store/user/log_compaction.h), however the database
  // was first opened.
  bool first_append = false;
  {
    MutexLock lock(mutex_);
    first_append = swept_.insert(name).second;
  }
  if (first_append) remove_abandoned_compactions(folder_.env, folder_.log_path(name));
  if (Status s = catch_up(name, *db); !s.is_ok()) return s;
  return db;
}

Result<std::shared_ptr<Db>> Appender::open_for_append(const std::string& name) {
  const std::string path = folder_.log_path(name);
  (void)dbs_.quarantine_bad_log(name);
  auto opened = dbs_.open_db(name);
  if (opened && *opened == nullptr) {
    // A new log: complete before its name appears, so that no reader
    // ever meets half a header.
    const auto header = encode_header(FileKind::kLog, new_generation());
    if (Status s =
            folder_.env.write_file_atomic(path, header, folder_.options.sync, folder_.file_mode());
        !s.is_ok()) {
      return s;
    }
    // The log's name must last as long as the entries synced into it.
    if (folder_.options.sync) (void)folder_.env.sync_dir(folder_.options.dir);
    opened = dbs_.open_db(name);
    if (opened && *opened == nullptr) return Status::io_error(path + " vanished as it was made");
  }
  if (!opened) return opened.status();
  std::shared_ptr<Db> db = std::move(*opened);
  if (!db->writable) return Status::io_error("cannot write " + path + ": it opens read-only");
  if (!db->hint) {
    if (Status s = dbs_.write_hint(name, *db); !s.is_ok()) return s;
  }
  return db;
}

Status Appender::catch_up(const std::string& name, Db& db) {
  {
    WriterLock lock(db.mutex);
    db.read_hint();
    // A hint record torn by a killed writer (or half a record) is cut off.
    if (auto size = db.hint->size(); size && *size > db.hint_read) {
      if (Status s = db.hint->truncate(db.hint_read); !s.is_ok()) return s;
    }
    auto size = db.log->size();
    if (!size) return size.status();
    if (*size >= db.read_end) return hint_log_tail(name, db, *size);
    // The log lost bytes its hint names (cut by hand?): scan it afresh.
    auto scan = scan_log(*db.log);
    if (!scan) return scan.status();
    db.index_scan(scan->live, scan->end);
  }
  return dbs_.write_hint(name, db);
}

Status Appender::hint_log_tail(const std::string& name, Db& db, std::uint64_t size) {
  // Collected first and applied only once their hint records are written:
  // what could not be hinted is looked for again by the next append.
  std::vector<HintRecord> found;
  std::vector<std::uint8_t> hints;
  std::uint64_t covered = db.hinted_end;
  for (std::uint64_t offset = db.hinted_end; offset < size;) {
    auto step = scan_step(*db.log, offset, size);
    if (!step) return step.status();
    if (step->kind == ScanStep::Kind::kEnd) break;
    if (step->kind == ScanStep::Kind::kDamaged) {
      if (step->next >= size) {
        folder_.log.debug("UserDb", "cutting " + std::to_string(step->damaged) +
                                        " bytes an interrupted write left at the end of " +
                                        folder_.log_path(name));
        if (Status s = db.log->truncate(offset); !s.is_ok()) return s;
        break;
      }
      // Damaged bytes no hint names: dead space, as verify sees it.
      folder_.log.debug("UserDb", "skipping " + std::to_string(step->damaged) +
                                      " damaged bytes at offset " + std::to_string(offset) +
                                      " of " + folder_.log_path(name));
      offset = covered = step->next;
      continue;
    }
    const auto encoded = encode_hint(step->record);
    hints.insert(hints.end(), encoded.begin(), encoded.end());
    found.push_back(step->record);
    offset = covered = step->next;
  }
  if (!hints.empty()) {
    if (Status s = db.hint->write_at(db.hint_read, hints); !s.is_ok()) {
      for (const HintRecord& record : found) db.apply(record);  // served, not hinted
      return s;
    }
    db.hint_read += hints.size();
  }
  db.apply_hinted(found);
  db.hinted_end = std::max(db.hinted_end, covered);
  return Status::ok();
}

void Appender::damaged(const std::string& name, const Generation& generation,
                       const HintRecord& record, const ByteBuffer& bytes, const Status& problem) {
  const std::string where = folder_.log_path(name) + " at offset " + std::to_string(record.offset);
  folder_.events.on_corrupt(kTierName, where, problem);
  if (bytes.size > 0) (void)folder_.quarantine.keep_copy(name, record.key.hex(), bytes.span());
  if (!trust_.ensure_dir(folder_.options.dir).is_ok()) return;
  auto lock = folder_.append_lock(name, std::chrono::seconds(1));
  if (!lock) return;
  auto db = db_for_append(name);
  if (!db) return;
  auto newest = (*db)->find(record.key);
  if ((*db)->generation != generation || !newest || newest->offset != record.offset) return;
  const auto removal = encode_removal(record.key);
  (void)append_locked(name, **db, record.key, removal, /*removal=*/true);
}

}  // namespace kcache::userlog
