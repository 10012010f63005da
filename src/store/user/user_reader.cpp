#include "store/user/user_reader.h"

#include <utility>

#include "base/mutex.h"
#include "format/entry.h"

namespace kcache::userlog {

Result<std::optional<Entry>> UserReader::get_from(const std::string& name, const CacheKey& key) {
  if (trust_.refusal() != nullptr) return std::optional<Entry>();
  auto db = dbs_.db_for(name);
  if (!db) return dbs_.open_failure(name, db.status());
  if (*db == nullptr) return std::optional<Entry>();
  auto found = (*db)->lookup(key);
  if (!found) {
    // Another process may have written it since, or replaced the files.
    if (dbs_.replaced(name, **db)) {
      dbs_.forget(name);
      db = dbs_.db_for(name);
      if (!db) return dbs_.open_failure(name, db.status());
      if (*db == nullptr) return std::optional<Entry>();
    } else {
      WriterLock lock((*db)->mutex);
      (*db)->read_hint();
      (*db)->read_past_hint();
    }
    found = (*db)->lookup(key);
    if (!found) return std::optional<Entry>();
  }
  auto entry = read_checked(name, **db, *found);
  if (!entry) return entry.status();
  if (entry->has_value()) uses_.record_use(name, **db, *found);
  (*db)->learnt(*found);
  return entry;
}

Result<Entry> UserReader::read_entry(const Db& db, const HintRecord& record, ByteBuffer& bytes) {
  bytes = ByteBuffer::allocate(record.size);
  if (Status s = db.log->read_at(record.offset, bytes.mutable_span()); !s.is_ok()) {
    if (s.code() == StatusCode::kCorruption) bytes = ByteBuffer();  // shorter than the hint says
    return s;
  }
  return decode_entry(bytes, &record.key);
}

Result<std::optional<Entry>> UserReader::read_checked(const std::string& name, Db& db,
                                                      Db::Found& found) {
  // A view of the mapped log when it passes every check; else read again,
  // and what is wrong said below.
  const HintRecord& record = found.record;
  if (auto mapped = db.mapped.read(*db.log, record, found.checked_epoch)) return mapped;
  ByteBuffer bytes;
  auto entry = read_entry(db, record, bytes);
  if (entry) return std::optional<Entry>(std::move(*entry));
  // An I/O error is not damage: reported as such, nothing is removed.
  if (entry.status().code() != StatusCode::kCorruption) return entry.status();
  if (auto elsewhere = recheck_against_log(name, db, record)) {
    ByteBuffer again;
    if (auto moved = read_entry(db, *elsewhere, again))
      return std::optional<Entry>(std::move(*moved));
  }
  appender_.damaged(name, db.generation, record, bytes, entry.status());
  return std::optional<Entry>();
}

std::optional<HintRecord> UserReader::recheck_against_log(const std::string& name, Db& db,
                                                          const HintRecord& record) {
  HintRecord found;
  std::uint64_t scanned = 0;
  {
    WriterLock lock(db.mutex);
    if (std::exchange(db.checked_against_log, true)) return std::nullopt;
    auto scan = scan_log(*db.log);
    if (!scan) return std::nullopt;
    auto it = scan->live.find(record.key);
    if (it == scan->live.end() || it->second.offset == record.offset) return std::nullopt;
    // The hint misplaced a record that verifies: the hint is wrong, not the
    // log. What the process knows is replaced by the scan, and the hint is
    // rebuilt from it when no one is appending.
    const std::string hint_path = folder_.hint_path(name);
    folder_.log.warn_once("UserDb:hint:" + hint_path, "UserDb",
                          "The hint file " + hint_path + " placed entry " + record.key.hex() +
                              " at offset " + std::to_string(record.offset) + " of " +
                              folder_.log_path(name) + ", which holds it at " +
                              std::to_string(it->second.offset) +
                              "; the hint is rebuilt from the log (no entry is lost)");
    found = it->second;
    scanned = scan->size;
    db.index_scan(scan->live, scan->end);
  }
  dbs_.rewrite_hint_after_scan(name, db, scanned);
  return found;
}

Status UserReader::for_each_entry(
    const std::string& name, const std::function<void(const Entry&, const HintRecord&)>& action) {
  auto db = dbs_.db_for(name);
  if (db && *db && dbs_.replaced(name, **db)) {
    dbs_.forget(name);
    db = dbs_.db_for(name);
  }
  if (!db) {
    // A bad log is dealt with as a lookup would; any other failure (no
    // permission, an I/O error) is the caller's to report.
    auto info = folder_.env.file_info(folder_.log_path(name));
    if ((info && info->type != FileType::kRegular) ||
        db.status().code() == StatusCode::kCorruption) {
      (void)dbs_.open_failure(name, db.status());
      return Status::ok();
    }
    return db.status();
  }
  if (*db == nullptr) return Status::ok();
  {
    WriterLock lock((*db)->mutex);
    (*db)->read_hint();
  }
  for (const HintRecord& record : (*db)->records()) {
    Db::Found found{record};
    auto entry = read_checked(name, **db, found);
    if (!entry) return entry.status();
    if (entry->has_value()) action(**entry, record);
    (*db)->learnt(found);
  }
  return Status::ok();
}

}  // namespace kcache::userlog
