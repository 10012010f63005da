#include "store/user/user_tier_impl.h"

#include <algorithm>
#include <cstring>
#include <shared_mutex>

#include "base/hash.h"
#include "format/entry.h"
#include "store/user/log_compaction.h"

namespace kcache::userlog {

Result<std::optional<Entry>> UserTier::get(const DbNames& db, const CacheKey& key) {
  auto found = get_from(db.exact, key);
  if (!found || found->has_value() || db.arch == db.exact) return found;
  return get_from(db.arch, key);
}

Status UserTier::put(const std::string& db, const Entry& entry,
                     std::span<const std::uint8_t> encoded) {
  Status s = append(db, entry.key, encoded);
  if (s.is_ok()) after_put();
  return s;
}

Status UserTier::ready_to_store() {
  if (Status made = ensure_dir(options_.dir); !made.is_ok()) return made;
  if (Status writable = env_.check_writable(options_.dir); !writable.is_ok()) return writable;
  return Status::ok();
}

Status UserTier::remove(const std::string& db, const CacheKey& key) {
  if (const std::string* refused = refusal()) return Status::not_supported(*refused);
  auto open = db_for(db);
  if (!open) return open.status();
  if (*open == nullptr) return Status::ok();
  if (!(*open)->find(key)) {
    std::unique_lock lock((*open)->mutex);
    (*open)->read_hint();
  }
  if (!(*open)->find(key)) return Status::ok();
  const auto removal = encode_removal(key);
  return append(db, key, removal, /*removal=*/true);
}

Result<std::unique_ptr<FileLock>> UserTier::try_lock(const std::string& db, const CacheKey& key) {
  // In a folder that cannot be created or written, no process can store
  // the kernel, so there is nothing to wait for: a lock that holds
  // nothing, and the write after the compile reports the folder, once.
  if (!ensure_dir(options_.dir).is_ok()) return std::make_unique<FileLock>();
  std::uint64_t offset = 0;
  for (int i = 0; i < 8; ++i) offset = (offset << 8) | key.bytes()[i];
  auto lock = lock_byte(db, offset | 1);  // odd: byte 0 is the append lock
  if (!lock && !folder_writable()) return std::make_unique<FileLock>();
  return lock;
}

Result<std::vector<std::string>> UserTier::databases() const {
  if (const std::string* refused = const_cast<UserTier*>(this)->refusal()) {
    return Status::unavailable(*refused);
  }
  auto entries = env_.list_dir(options_.dir);
  if (!entries) {
    if (entries.status().code() == StatusCode::kNotFound) return std::vector<std::string>();
    return entries.status();
  }
  std::set<std::string> names;
  for (const auto& e : *entries) {
    for (std::string_view suffix : {kLogSuffix, kHintSuffix}) {
      if (e.name.ends_with(suffix) && e.name.size() > suffix.size()) {
        names.insert(e.name.substr(0, e.name.size() - suffix.size()));
      }
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Result<std::vector<EntryInfo>> UserTier::list(const std::string& db) const {
  std::vector<EntryInfo> out;
  auto* self = const_cast<UserTier*>(this);
  Status s = self->for_each_entry(db, [&](const Entry& entry, const HintRecord& record) {
    out.push_back(summarize_entry(db, entry, record.size));
  });
  if (!s.is_ok()) return s;
  // When each was last used, where the use table knows (listing is no use).
  auto open = self->db_for(db);
  if (!open || *open == nullptr || !(*open)->writable) return out;
  const UseTable* table = self->use_table(db, **open, minute_of(env_.now_unix()), /*force=*/true);
  if (table == nullptr) return out;
  for (EntryInfo& info : out) {
    // By the minute: used in the minute it was made is "when it was made".
    if (auto minute = table->last_use(info.key)) {
      info.last_used_unix = std::max(std::int64_t{*minute} * 60, info.created_unix);
    }
  }
  return out;
}

Result<std::vector<Entry>> UserTier::read_all(const std::string& db) const {
  std::vector<Entry> out;
  Status s = const_cast<UserTier*>(this)->for_each_entry(
      db, [&](const Entry& entry, const HintRecord&) { out.push_back(entry); });
  if (!s.is_ok()) return s;
  return out;
}

Result<std::uint64_t> UserTier::clear() {
  auto names = databases();
  if (!names) return names.status();
  std::uint64_t removed = 0;
  for (const auto& db : *names) {
    // Under the append lock, so that no write of this database is lost
    // halfway; a lock held too long (a stopped process) does not stop
    // the clear.
    auto lock = append_lock(db, kAppendWait);
    if (auto open = db_for(db); open && *open) removed += (*open)->size();
    forget(db);
    // remove_all: a folder where a file belongs goes too. Processes that
    // hold the old files notice on their next miss.
    if (Status s = env_.remove_all(log_path(db)); !s.is_ok()) return s;
    if (Status s = env_.remove_all(hint_path(db)); !s.is_ok()) return s;
    if (Status s = env_.remove_all(use_path(db)); !s.is_ok()) return s;
  }
  return removed;
}

Result<std::optional<Entry>> UserTier::get_from(const std::string& name, const CacheKey& key) {
  if (refusal() != nullptr) return std::optional<Entry>();
  auto db = db_for(name);
  if (!db) return open_failure(name, db.status());
  if (*db == nullptr) return std::optional<Entry>();
  auto found = (*db)->lookup(key);
  if (!found) {
    // Another process may have written it since, or replaced the files.
    if (replaced(name, **db)) {
      forget(name);
      db = db_for(name);
      if (!db) return open_failure(name, db.status());
      if (*db == nullptr) return std::optional<Entry>();
    } else {
      std::unique_lock lock((*db)->mutex);
      (*db)->read_hint();
      (*db)->read_past_hint();
    }
    found = (*db)->lookup(key);
    if (!found) return std::optional<Entry>();
  }
  auto entry = read_checked(name, **db, *found);
  if (!entry) return entry.status();
  if (entry->has_value()) record_use(name, **db, *found);
  (*db)->learnt(*found);
  return entry;
}

Result<Entry> UserTier::read_entry(const Db& db, const HintRecord& record, ByteBuffer& bytes) {
  bytes = ByteBuffer::allocate(record.size);
  if (Status s = db.log->read_at(record.offset, bytes.mutable_span()); !s.is_ok()) {
    if (s.code() == StatusCode::kCorruption) bytes = ByteBuffer();  // shorter than the hint says
    return s;
  }
  return decode_entry(bytes, &record.key);
}

Result<std::optional<Entry>> UserTier::read_checked(const std::string& name, Db& db,
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
  damaged(name, db.generation, record, bytes, entry.status());
  return std::optional<Entry>();
}

std::optional<HintRecord> UserTier::recheck_against_log(const std::string& name, Db& db,
                                                        const HintRecord& record) {
  std::unique_lock lock(db.mutex);
  if (std::exchange(db.checked_against_log, true)) return std::nullopt;
  auto scan = scan_log(*db.log);
  if (!scan) return std::nullopt;
  auto it = scan->live.find(record.key);
  if (it == scan->live.end() || it->second.offset == record.offset) return std::nullopt;
  // The hint misplaced a record that verifies: the hint is wrong, not the
  // log. What the process knows is replaced by the scan, and the hint is
  // rebuilt from it when no one is appending.
  log_.warn_once("UserDb:hint:" + hint_path(name), "UserDb",
                 "The hint file " + hint_path(name) + " placed entry " + record.key.hex() +
                     " at offset " + std::to_string(record.offset) + " of " + log_path(name) +
                     ", which holds it at " + std::to_string(it->second.offset) +
                     "; the hint is rebuilt from the log (no entry is lost)");
  const HintRecord found = it->second;
  db.index_scan(scan->live, scan->end);
  lock.unlock();
  rewrite_hint_after_scan(name, db, scan->size);
  return found;
}

Result<std::optional<Entry>> UserTier::open_failure(const std::string& name,
                                                    const Status& problem) {
  const std::string path = log_path(name);
  auto info = env_.file_info(path);
  const bool bad =
      (info && info->type != FileType::kRegular) || problem.code() == StatusCode::kCorruption;
  if (!bad) {
    log_.debug("UserDb", "cannot open " + path + ": " + problem.message());
    return std::optional<Entry>();
  }
  if (auto lock = lock_byte(name, kAppendLockOffset); lock && *lock) {
    (void)quarantine_bad_log(name);
  }
  return std::optional<Entry>();
}

Status UserTier::quarantine_bad_log(const std::string& name) {
  const std::string path = log_path(name);
  if (auto info = env_.file_info(path); info && info->type != FileType::kRegular) {
    quarantine_file(name, path, Status::corruption(path + " is not a regular file"));
    return Status::ok();
  }
  auto opened = open_db(name);
  if (!opened && opened.status().code() == StatusCode::kCorruption) {
    quarantine_file(name, path, Status::corruption(path + ": " + opened.status().message()));
    return Status::ok();
  }
  return opened.status();
}

Result<std::shared_ptr<Db>> UserTier::db_for(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = dbs_.find(name); it != dbs_.end()) return it->second;
  }
  auto opened = open_db(name);
  if (!opened || *opened == nullptr) return opened;
  std::lock_guard lock(mutex_);
  return dbs_.try_emplace(name, std::move(*opened)).first->second;
}

void UserTier::forget(const std::string& name) {
  std::lock_guard lock(mutex_);
  dbs_.erase(name);
}

Result<std::shared_ptr<Db>> UserTier::open_db(const std::string& name) {
  warn_if_network();
  const std::string path = log_path(name);
  auto db = std::make_shared<Db>();
  auto log = env_.open_file(path, OpenMode::kReadWrite);
  db->writable = log.is_ok();
  if (!log) {
    if (log.status().code() == StatusCode::kNotFound) return std::shared_ptr<Db>();
    log = env_.open_random_access(path);  // a read-only file or folder
    if (!log) {
      if (log.status().code() == StatusCode::kNotFound) return std::shared_ptr<Db>();
      return log.status();
    }
  }
  if (Status own = opened_own_file(path, **log); !own.is_ok()) return own;
  if (trust_.load(std::memory_order_acquire) != kTrusted) {  // the folder exists now
    if (const std::string* refused = check_trust()) return Status::not_supported(*refused);
  }
  db->log = std::move(*log);
  std::uint8_t header[kHeaderSize];
  auto size = db->log->size();
  if (!size) return size.status();
  if (*size < kHeaderSize) {
    return Status::corruption("shorter than a log header (" + std::to_string(*size) + " bytes)");
  }
  if (Status s = db->log->read_at(0, header); !s.is_ok()) return s;
  auto generation = decode_header(FileKind::kLog, header);
  if (!generation) return generation.status();
  db->generation = *generation;

  auto hint = db->writable ? env_.open_file(hint_path(name), OpenMode::kReadWrite)
                           : env_.open_random_access(hint_path(name));
  if (hint && opened_own_file(hint_path(name), **hint).is_ok() &&
      hint_describes(**hint, db->generation)) {
    db->hint = std::move(*hint);
    std::unique_lock lock(db->mutex);
    db->read_hint();
    return db;
  }
  // No usable hint: the log says it all, at the cost of reading it.
  auto scan = scan_log(*db->log);
  if (!scan) return scan.status();
  {
    std::unique_lock lock(db->mutex);
    db->index_scan(scan->live, scan->end);
  }
  rewrite_hint_after_scan(name, *db, scan->size);
  return db;
}

void UserTier::rewrite_hint_after_scan(const std::string& name, Db& db, std::uint64_t scanned) {
  if (!db.writable) return;
  // Only if no one appended since the scan (what the scan missed, a
  // removal say, would be dropped from the hint).
  if (auto lock = lock_byte(name, kAppendLockOffset); lock && *lock) {
    auto now = env_.file_info(log_path(name));
    auto size_now = db.log->size();
    if (now && now->id == db.log->id() && size_now && *size_now == scanned) {
      (void)write_hint(name, db);
    }
  }
}

bool UserTier::replaced(const std::string& name, const Db& db) const {
  auto log = env_.file_info(log_path(name));
  if (!log || log->id != db.log->id()) return true;
  auto hint = env_.file_info(hint_path(name));
  std::shared_lock lock(db.mutex);  // write_hint may swap db.hint
  if (!db.hint) return hint.is_ok();
  return !hint || hint->id != db.hint->id();
}

template <class Action>
Status UserTier::for_each_entry(const std::string& name, Action&& action) {
  auto db = db_for(name);
  if (db && *db && replaced(name, **db)) {
    forget(name);
    db = db_for(name);
  }
  if (!db) {
    // A bad log is dealt with as a lookup would; any other failure (no
    // permission, an I/O error) is the caller's to report.
    auto info = env_.file_info(log_path(name));
    if ((info && info->type != FileType::kRegular) ||
        db.status().code() == StatusCode::kCorruption) {
      (void)open_failure(name, db.status());
      return Status::ok();
    }
    return db.status();
  }
  if (*db == nullptr) return Status::ok();
  {
    std::unique_lock lock((*db)->mutex);
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

Status UserTier::append(const std::string& name, const CacheKey& key,
                        std::span<const std::uint8_t> bytes, bool removal) {
  if (Status s = ensure_dir(options_.dir); !s.is_ok()) return s;
  auto lock = append_lock(name, kAppendWait);
  if (!lock) return lock.status();
  auto db = db_for_append(name);
  if (!db) return db.status();
  return append_locked(name, **db, key, bytes, removal);
}

Status UserTier::append_locked(const std::string& name, Db& d, const CacheKey& key,
                               std::span<const std::uint8_t> bytes, bool removal) {
  auto size = d.log->size();
  if (!size) return size.status();
  const std::uint64_t at = padded(*size);
  std::uint64_t hint_at = 0;
  {
    std::shared_lock read(d.mutex);
    hint_at = d.hint_read;
  }
  // Its use first: an eviction pass may look at the log as soon as the
  // record is there, and must not take a new entry for one never used.
  if (!removal) stamp_use(name, d, key);
  static constexpr std::uint8_t kPadding[kAlignment] = {};
  const std::uint64_t pad = padded(bytes.size()) - bytes.size();
  Status s = d.log->write_at(at, bytes);
  if (s.is_ok() && pad > 0) s = d.log->write_at(at + bytes.size(), {kPadding, pad});
  if (s.is_ok() && options_.sync) s = d.log->sync();
  if (!s.is_ok()) {
    (void)d.log->truncate(at);  // nothing half-written stays for a reader
    return s;
  }
  const HintRecord record{key, at, removal ? 0 : static_cast<std::uint32_t>(bytes.size())};
  // The entry is committed: a hint record that cannot be written is
  // written by the next append (which reads the log past the hint).
  Status hinted = d.hint->write_at(hint_at, encode_hint(record));
  if (!hinted.is_ok()) {
    log_.debug("UserDb", "cannot append to " + hint_path(name) + ": " + hinted.message());
  }
  {
    std::unique_lock write(d.mutex);
    if (hinted.is_ok()) {
      d.apply_hinted({&record, 1});
      d.hint_read = hint_at + kHintRecordSize;
    } else {
      d.apply(record);
    }
  }
  return Status::ok();
}

Result<std::shared_ptr<Db>> UserTier::db_for_append(const std::string& name) {
  std::shared_ptr<Db> db;
  {
    std::lock_guard lock(mutex_);
    if (auto it = dbs_.find(name); it != dbs_.end()) db = it->second;
  }
  if (db == nullptr || replaced(name, *db) || !db->writable || !db->hint) {
    forget(name);
    auto opened = open_for_append(name);
    if (!opened) return opened.status();
    db = std::move(*opened);
    std::lock_guard lock(mutex_);
    dbs_[name] = db;
  }
  // Once per process and database, under the append lock: what killed
  // compactions left (store/user/log_compaction.h), however the database
  // was first opened.
  bool first_append = false;
  {
    std::lock_guard lock(mutex_);
    first_append = swept_.insert(name).second;
  }
  if (first_append) remove_abandoned_compactions(env_, log_path(name));
  if (Status s = catch_up(name, *db); !s.is_ok()) return s;
  return db;
}

Result<std::shared_ptr<Db>> UserTier::open_for_append(const std::string& name) {
  const std::string path = log_path(name);
  (void)quarantine_bad_log(name);
  auto opened = open_db(name);
  if (opened && *opened == nullptr) {
    // A new log: complete before its name appears, so that no reader
    // ever meets half a header.
    const auto header = encode_header(FileKind::kLog, new_generation());
    if (Status s = env_.write_file_atomic(path, header, options_.sync, file_mode()); !s.is_ok()) {
      return s;
    }
    // The log's name must last as long as the entries synced into it.
    if (options_.sync) (void)env_.sync_dir(options_.dir);
    opened = open_db(name);
    if (opened && *opened == nullptr) return Status::io_error(path + " vanished as it was made");
  }
  if (!opened) return opened.status();
  std::shared_ptr<Db> db = std::move(*opened);
  if (!db->writable) return Status::io_error("cannot write " + path + ": it opens read-only");
  if (!db->hint) {
    if (Status s = write_hint(name, *db); !s.is_ok()) return s;
  }
  return db;
}

Status UserTier::catch_up(const std::string& name, Db& db) {
  std::unique_lock lock(db.mutex);
  db.read_hint();
  // A hint record torn by a killed writer (or half a record) is cut off.
  if (auto size = db.hint->size(); size && *size > db.hint_read) {
    if (Status s = db.hint->truncate(db.hint_read); !s.is_ok()) return s;
  }
  auto size = db.log->size();
  if (!size) return size.status();
  if (*size < db.read_end) {
    // The log lost bytes its hint names (cut by hand?): scan it afresh.
    auto scan = scan_log(*db.log);
    if (!scan) return scan.status();
    db.index_scan(scan->live, scan->end);
    lock.unlock();
    return write_hint(name, db);
  }
  // Collected first and applied only once their hint records are written:
  // what could not be hinted is looked for again by the next append.
  std::vector<HintRecord> found;
  std::vector<std::uint8_t> hints;
  std::uint64_t covered = db.hinted_end;
  for (std::uint64_t offset = db.hinted_end; offset < *size;) {
    auto step = scan_step(*db.log, offset, *size);
    if (!step) return step.status();
    if (step->kind == ScanStep::Kind::kEnd) break;
    if (step->kind == ScanStep::Kind::kDamaged) {
      if (step->next >= *size) {
        log_.debug("UserDb", "cutting " + std::to_string(step->damaged) +
                                 " bytes an interrupted write left at the end of " +
                                 log_path(name));
        if (Status s = db.log->truncate(offset); !s.is_ok()) return s;
        break;
      }
      // Damaged bytes no hint names: dead space, as verify sees it.
      log_.debug("UserDb", "skipping " + std::to_string(step->damaged) +
                               " damaged bytes at offset " + std::to_string(offset) + " of " +
                               log_path(name));
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

Status UserTier::write_hint(const std::string& name, Db& db) {
  std::vector<std::uint8_t> bytes;
  const auto header = encode_header(FileKind::kHint, db.generation);
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (const HintRecord& record : db.records()) {
    const auto encoded = encode_hint(record);
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
  }
  const std::string path = hint_path(name);
  if (auto info = env_.file_info(path); info && info->type != FileType::kRegular) {
    quarantine_file(name, path, Status::corruption(path + " is not a regular file"));
  }
  if (Status s = env_.write_file_atomic(path, bytes, /*sync=*/false, file_mode()); !s.is_ok())
    return s;
  auto hint = env_.open_file(path, OpenMode::kReadWrite);
  if (!hint) return hint.status();
  if (Status own = opened_own_file(path, **hint); !own.is_ok()) return own;
  std::unique_lock lock(db.mutex);
  db.hint = std::move(*hint);
  db.hint_read = bytes.size();
  db.hinted_end = db.read_end;
  return Status::ok();
}

void UserTier::damaged(const std::string& name, const Generation& generation,
                       const HintRecord& record, const ByteBuffer& bytes, const Status& problem) {
  const std::string where = log_path(name) + " at offset " + std::to_string(record.offset);
  events_.on_corrupt(this->name(), where, problem);
  if (bytes.size > 0) (void)quarantine_.keep_copy(name, record.key.hex(), bytes.span());
  if (!ensure_dir(options_.dir).is_ok()) return;
  auto lock = append_lock(name, std::chrono::seconds(1));
  if (!lock) return;
  auto db = db_for_append(name);
  if (!db) return;
  auto newest = (*db)->find(record.key);
  if ((*db)->generation != generation || !newest || newest->offset != record.offset) return;
  const auto removal = encode_removal(record.key);
  (void)append_locked(name, **db, record.key, removal, /*removal=*/true);
}

}  // namespace kcache::userlog

namespace kcache {

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events) {
  return std::make_unique<userlog::UserTier>(std::move(options), env, log, events);
}

}  // namespace kcache
