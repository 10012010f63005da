#include "store/user/user_tier.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "format/entry.h"
#include "format/hash.h"
#include "store/user/log_compaction.h"
#include "store/user/quarantine.h"
#include "store/user/user_db.h"
#include "store/user/user_log.h"

namespace kcache {
namespace {

using userlog::Db;
using userlog::hint_describes;
using userlog::HintRecord;
using userlog::LogScan;
using userlog::RecordMap;
using userlog::scan_log;
using userlog::ScanStep;

constexpr std::string_view kLogSuffix = ".ukdb";
constexpr std::string_view kHintSuffix = ".ukdx";
constexpr std::string_view kLocksSuffix = ".locks";
// Byte 0 of <db>.locks guards appends to the log; keys lock odd bytes.
constexpr std::uint64_t kAppendLockOffset = 0;
// How long a write waits for other processes' appends (each one entry and
// its fdatasync) before it gives up storing.
constexpr auto kAppendWait = std::chrono::seconds(10);
// Damaged log bytes larger than this are not copied to quarantine/.
constexpr std::uint64_t kMaxQuarantineCopy = 64u << 20;
// A temporary file older than this was left by a killed writer.
constexpr std::int64_t kStaleTempSeconds = 3600;

class UserTier final : public Tier {
 public:
  UserTier(UserTierOptions options, Env& env, const Logger& log, TierEvents& events)
      : options_(std::move(options)),
        env_(env),
        log_(log),
        events_(events),
        quarantine_(env, options_.dir) {}

  std::string_view name() const override { return "user"; }

  // Looks in the exact database, then in the arch-wide one: an entry
  // compiled for "sm_90" serves "sm_90_132" too (the key is the same).
  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override {
    auto found = get_from(db.exact, key);
    if (!found || found->has_value() || db.arch == db.exact) return found;
    return get_from(db.arch, key);
  }

  Status put(const std::string& db, const Entry& entry,
             std::span<const std::uint8_t> encoded) override {
    return append(db, entry.key, encoded);
  }

  Status remove(const std::string& db, const CacheKey& key) override {
    auto open = db_for(db);
    if (!open) return open.status();
    if (*open == nullptr) return Status::ok();
    if (!(*open)->find(key)) {
      std::unique_lock lock((*open)->mutex);
      (*open)->read_hint();
    }
    if (!(*open)->find(key)) return Status::ok();
    const auto removal = userlog::encode_removal(key);
    return append(db, key, removal, /*removal=*/true);
  }

  Result<std::unique_ptr<FileLock>> try_lock(const std::string& db, const CacheKey& key) override {
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

  Result<std::vector<std::string>> databases() const override {
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

  Result<std::vector<EntryInfo>> list(const std::string& db) const override {
    std::vector<EntryInfo> out;
    Status s = const_cast<UserTier*>(this)->for_each_entry(
        db, [&](const Entry& entry, const HintRecord& record) {
          out.push_back(summarize_entry(db, entry, record.size));
        });
    if (!s.is_ok()) return s;
    return out;
  }

  Result<std::vector<Entry>> read_all(const std::string& db) const override {
    std::vector<Entry> out;
    Status s = const_cast<UserTier*>(this)->for_each_entry(
        db, [&](const Entry& entry, const HintRecord&) { out.push_back(entry); });
    if (!s.is_ok()) return s;
    return out;
  }

  Result<std::uint64_t> clear() override {
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
    }
    return removed;
  }

  Status verify(bool repair, VerifyReport& report) override {
    auto names = databases();
    if (!names) return names.status();
    for (const auto& db : *names) {
      ++report.databases_checked;
      verify_db(db, repair, report);
      for (const auto& path : stale_temp_files(db)) {
        bool fixed = repair && env_.remove_file(path).is_ok();
        report.problems.push_back({path, "temporary file left by an interrupted write", fixed});
      }
    }
    return Status::ok();
  }

 private:
  // ---- reading --------------------------------------------------------

  Result<std::optional<Entry>> get_from(const std::string& name, const CacheKey& key) {
    auto db = db_for(name);
    if (!db) return open_failure(name, db.status());
    if (*db == nullptr) return std::optional<Entry>();
    auto record = (*db)->find(key);
    if (!record) {
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
      record = (*db)->find(key);
      if (!record) return std::optional<Entry>();
    }
    ByteBuffer bytes = ByteBuffer::allocate(record->size);
    if (Status s = (*db)->log->read_at(record->offset, bytes.mutable_span()); !s.is_ok()) {
      if (s.code() != StatusCode::kCorruption) return s;
      damaged(name, (*db)->generation, *record, ByteBuffer(), s);  // shorter than its hint says
      return std::optional<Entry>();
    }
    auto entry = decode_entry(bytes, &key);
    if (!entry) {
      damaged(name, (*db)->generation, *record, bytes, entry.status());
      return std::optional<Entry>();
    }
    return std::optional<Entry>(std::move(*entry));
  }

  // What a lookup makes of a database that cannot be opened: something
  // other than a file where the log belongs, or a log with a bad header, is
  // moved aside like any bad file, but only under the append lock and after
  // looking again (a writer may have just replaced it): when another
  // process holds the lock, the write after the compile does it. Any other
  // failure (no permission, an I/O error) is a miss: the write after the
  // compile meets the same cause and reports it, so that one cause gives
  // one warning.
  Result<std::optional<Entry>> open_failure(const std::string& name, const Status& problem) {
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

  // Moves the log of `name` aside, with one report, if it is still not a
  // usable log; the caller holds the append lock.
  Status quarantine_bad_log(const std::string& name) {
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

  // The open database `name`: nullptr when it has no log (yet).
  Result<std::shared_ptr<Db>> db_for(const std::string& name) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = dbs_.find(name); it != dbs_.end()) return it->second;
    }
    auto opened = open_db(name);
    if (!opened || *opened == nullptr) return opened;
    std::lock_guard lock(mutex_);
    return dbs_.try_emplace(name, std::move(*opened)).first->second;
  }

  void forget(const std::string& name) {
    std::lock_guard lock(mutex_);
    dbs_.erase(name);
  }

  // Opens the log of `name` (read-write when this process may write it)
  // and reads its hint; a hint that is missing or describes another log is
  // replaced by a scan of the log, and rebuilt when no one is appending.
  Result<std::shared_ptr<Db>> open_db(const std::string& name) {
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
    db->log = std::move(*log);
    std::uint8_t header[userlog::kHeaderSize];
    auto size = db->log->size();
    if (!size) return size.status();
    if (*size < userlog::kHeaderSize) {
      return Status::corruption("shorter than a log header (" + std::to_string(*size) + " bytes)");
    }
    if (Status s = db->log->read_at(0, header); !s.is_ok()) return s;
    auto generation = userlog::decode_header(userlog::FileKind::kLog, header);
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
      for (const auto& [key, record] : scan->live) db->apply(record);
      db->read_end = scan->end;
    }
    if (db->writable) {
      // Rewritten only if no one appended since the scan (what the scan
      // missed, a removal say, would be dropped from the hint).
      if (auto lock = lock_byte(name, kAppendLockOffset); lock && *lock) {
        auto now = env_.file_info(log_path(name));
        auto size_now = db->log->size();
        if (now && now->id == db->log->id() && size_now && *size_now == scan->size) {
          (void)write_hint(name, *db);
        }
      }
    }
    return db;
  }

  // Whether the files of `name` are no longer the ones `db` holds: cleared,
  // compacted, or a hint rebuilt by someone else.
  bool replaced(const std::string& name, const Db& db) const {
    auto log = env_.file_info(log_path(name));
    if (!log || log->id != db.log->id()) return true;
    auto hint = env_.file_info(hint_path(name));
    std::shared_lock lock(db.mutex);  // write_hint may swap db.hint
    if (!db.hint) return hint.is_ok();
    return !hint || hint->id != db.hint->id();
  }

  // Reads the newest record of every key of `name` and calls `action` with
  // each entry that passes its checks (others are reported and removed).
  template <class Action>
  Status for_each_entry(const std::string& name, Action&& action) {
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
      ByteBuffer bytes = ByteBuffer::allocate(record.size);
      Status s = (*db)->log->read_at(record.offset, bytes.mutable_span());
      // An I/O error is not damage: reported as such, nothing is removed.
      if (!s.is_ok() && s.code() != StatusCode::kCorruption) return s;
      Result<Entry> entry = s.is_ok() ? decode_entry(bytes, &record.key) : Result<Entry>(s);
      if (!entry) {
        damaged(name, (*db)->generation, record, s.is_ok() ? bytes : ByteBuffer(), entry.status());
        continue;
      }
      action(*entry, record);
    }
    return Status::ok();
  }

  // ---- writing --------------------------------------------------------

  // Appends `bytes` (an encoded entry, or a removal) for `key` to the log
  // of `name`, then its hint record. A failed append is cut off again.
  Status append(const std::string& name, const CacheKey& key, std::span<const std::uint8_t> bytes,
                bool removal = false) {
    if (Status s = ensure_dir(options_.dir); !s.is_ok()) return s;
    auto lock = append_lock(name, kAppendWait);
    if (!lock) return lock.status();
    auto db = db_for_append(name);
    if (!db) return db.status();
    return append_locked(name, **db, key, bytes, removal);
  }

  // append() once the append lock is held and `d` caught up.
  Status append_locked(const std::string& name, Db& d, const CacheKey& key,
                       std::span<const std::uint8_t> bytes, bool removal) {
    auto size = d.log->size();
    if (!size) return size.status();
    const std::uint64_t at = userlog::padded(*size);
    std::uint64_t hint_at = 0;
    {
      std::shared_lock read(d.mutex);
      hint_at = d.hint_read;
    }
    static constexpr std::uint8_t kPadding[userlog::kAlignment] = {};
    const std::uint64_t pad = userlog::padded(bytes.size()) - bytes.size();
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
    Status hinted = d.hint->write_at(hint_at, userlog::encode_hint(record));
    if (!hinted.is_ok()) {
      log_.debug("UserDb", "cannot append to " + hint_path(name) + ": " + hinted.message());
    }
    std::unique_lock write(d.mutex);
    if (hinted.is_ok()) {
      d.apply_hinted(record);
      d.hint_read = hint_at + userlog::kHintRecordSize;
    } else {
      d.apply(record);
    }
    return Status::ok();
  }

  // The database `name` ready for an append; the caller holds its append
  // lock. Creates the log when missing (a bad one is moved aside first),
  // rebuilds a hint that does not match it, and catches the hint up with
  // the log: records a killed writer appended without their hint records
  // are added, and damaged bytes that end the log (a write cut short) are
  // cut off.
  Result<std::shared_ptr<Db>> db_for_append(const std::string& name) {
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
    if (Status s = catch_up(name, *db); !s.is_ok()) return s;
    return db;
  }

  Result<std::shared_ptr<Db>> open_for_append(const std::string& name) {
    const std::string path = log_path(name);
    (void)quarantine_bad_log(name);
    auto opened = open_db(name);
    if (opened && *opened == nullptr) {
      // A new log: complete before its name appears, so that no reader
      // ever meets half a header.
      const auto header =
          userlog::encode_header(userlog::FileKind::kLog, userlog::new_generation());
      if (Status s = env_.write_file_atomic(path, header, options_.sync, 0600); !s.is_ok()) {
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

  // Brings the hint of `db` up to the log's end; the caller holds the
  // append lock.
  Status catch_up(const std::string& name, Db& db) {
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
      db.newest.clear();
      for (const auto& [key, record] : scan->live) db.apply(record);
      db.read_end = scan->end;
      lock.unlock();
      return write_hint(name, db);
    }
    // Collected first and applied only once their hint records are written:
    // what could not be hinted is looked for again by the next append.
    std::vector<HintRecord> found;
    std::vector<std::uint8_t> hints;
    std::uint64_t covered = db.hinted_end;
    for (std::uint64_t offset = db.hinted_end; offset < *size;) {
      auto step = userlog::scan_step(*db.log, offset, *size);
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
      const auto encoded = userlog::encode_hint(step->record);
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
    for (const HintRecord& record : found) db.apply_hinted(record);
    db.hinted_end = std::max(db.hinted_end, covered);
    return Status::ok();
  }

  // Writes a new hint for `db` (its newest records) and renames it into
  // place; the caller holds the append lock.
  Status write_hint(const std::string& name, Db& db) {
    std::vector<std::uint8_t> bytes;
    const auto header = userlog::encode_header(userlog::FileKind::kHint, db.generation);
    bytes.insert(bytes.end(), header.begin(), header.end());
    for (const HintRecord& record : db.records()) {
      const auto encoded = userlog::encode_hint(record);
      bytes.insert(bytes.end(), encoded.begin(), encoded.end());
    }
    const std::string path = hint_path(name);
    if (auto info = env_.file_info(path); info && info->type != FileType::kRegular) {
      quarantine_file(name, path, Status::corruption(path + " is not a regular file"));
    }
    if (Status s = env_.write_file_atomic(path, bytes, /*sync=*/false, 0600); !s.is_ok()) return s;
    auto hint = env_.open_file(path, OpenMode::kReadWrite);
    if (!hint) return hint.status();
    if (Status own = opened_own_file(path, **hint); !own.is_ok()) return own;
    std::unique_lock lock(db.mutex);
    db.hint = std::move(*hint);
    db.hint_read = bytes.size();
    db.hinted_end = db.read_end;
    return Status::ok();
  }

  // Reports a record that failed its checks, copies its bytes to
  // quarantine/, and appends a removal so that no one reads it again (when
  // the record is still its key's newest).
  void damaged(const std::string& name, const userlog::Generation& generation,
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
    const auto removal = userlog::encode_removal(record.key);
    (void)append_locked(name, **db, record.key, removal, /*removal=*/true);
  }

  // ---- verify ---------------------------------------------------------

  void verify_db(const std::string& name, bool repair, VerifyReport& report) {
    const std::string path = log_path(name);
    auto lock = append_lock(name, kAppendWait);  // a still log to look at
    if (!lock) {
      report.problems.push_back({path, "cannot check: " + lock.status().message(), false});
      return;
    }
    auto info = env_.file_info(path);
    if (!info) {
      bool fixed = repair && env_.remove_all(hint_path(name)).is_ok();
      report.problems.push_back({hint_path(name), "hint file without its log", fixed});
      return;
    }
    if (info->type != FileType::kRegular) {
      bool fixed = repair && quarantine_.move_in(name, path);
      report.problems.push_back({path, "not a regular file", fixed});
      return;
    }
    auto log = repair ? env_.open_file(path, OpenMode::kReadWrite) : env_.open_random_access(path);
    if (log) {
      if (Status own = opened_own_file(path, **log); !own.is_ok()) log = own;
    }
    if (!log) {
      report.problems.push_back({path, log.status().message(), false});
      return;
    }
    std::uint8_t header[userlog::kHeaderSize];
    Status read = (*log)->read_at(0, header);
    auto generation = read.is_ok() ? userlog::decode_header(userlog::FileKind::kLog, header)
                                   : Result<userlog::Generation>(read);
    if (!generation) {
      log->reset();
      bool fixed = repair && quarantine_.move_in(name, path);
      if (fixed) forget(name);
      report.problems.push_back({path, generation.status().message(), fixed});
      return;
    }
    auto scan = scan_log(**log);
    if (!scan) {
      report.problems.push_back({path, scan.status().message(), false});
      return;
    }
    report.entries_ok += scan->entries;
    report.entries_checked += scan->entries;

    std::vector<VerifyReport::Problem> found;
    const RecordMap hinted = read_hint_file(name, *generation, found);
    const bool hint_file_wrong = !found.empty();
    // Damaged bytes where the hint places a present entry are a lost
    // entry, named by its key. Damaged bytes no one refers to (a record
    // already found bad by a lookup and removed, or replaced since) are
    // dead space, which compaction drops; they are not a problem.
    std::map<std::uint64_t, CacheKey> damaged_keys;  // region offset -> key
    for (const ScanStep& step : scan->damaged) {
      for (const auto& [key, record] : hinted) {
        if (record.removal() || record.offset < step.record.offset || record.offset >= step.next) {
          continue;
        }
        damaged_keys[step.record.offset] = key;
        ++report.entries_checked;
        found.push_back({path + " at offset " + std::to_string(step.record.offset),
                         "entry " + key.hex() + ": " + step.problem.message() + " (" +
                             std::to_string(step.damaged) + " bytes)",
                         false});
        break;
      }
    }
    const bool damaged = !damaged_keys.empty();
    if (scan->torn_tail) {
      found.push_back({path,
                       "an interrupted write left " + std::to_string(scan->torn_tail->damaged) +
                           " bytes at the end of the log",
                       false});
    }
    const bool hint_wrong =
        compare_hint(name, *scan, hinted, damaged_keys, found) || hint_file_wrong;

    if (repair && !found.empty()) {
      Status fixed;
      if (damaged) {
        fixed = compact(name, **log, *scan, damaged_keys);
      } else {
        if (scan->torn_tail) fixed = (*log)->truncate(scan->torn_tail->record.offset);
        if (fixed.is_ok() && hint_wrong) {
          Db db;
          db.generation = *generation;
          for (const auto& [key, record] : scan->live) db.apply(record);
          db.read_end = scan->end;
          fixed = write_hint(name, db);
        }
      }
      forget(name);
      for (auto& problem : found) problem.repaired = fixed.is_ok();
      if (!fixed.is_ok()) found.push_back({path, "repair failed: " + fixed.message(), false});
    }
    report.problems.insert(report.problems.end(), found.begin(), found.end());
  }

  // The records the hint file of `name` holds, when it describes the log
  // of `generation`; adds what is wrong with the file itself to `found`.
  RecordMap read_hint_file(const std::string& name, const userlog::Generation& generation,
                           std::vector<VerifyReport::Problem>& found) {
    const std::string path = hint_path(name);
    auto hint = env_.open_random_access(path);
    if (hint) {
      if (Status own = opened_own_file(path, **hint); !own.is_ok()) hint = own;
    }
    if (!hint) {
      found.push_back({path, hint.status().message(), false});
      return {};
    }
    Db db;
    db.hint = std::move(*hint);
    if (!hint_describes(*db.hint, generation)) {
      found.push_back({path, "the hint file does not describe this log", false});
      return {};
    }
    db.read_hint();
    if (auto size = db.hint->size(); size && *size > db.hint_read) {
      found.push_back({path,
                       "damaged hint record at offset " + std::to_string(db.hint_read) + " (" +
                           std::to_string(*size - db.hint_read) + " bytes not read)",
                       false});
    }
    return std::move(db.newest);
  }

  // Adds where the hint disagrees with a scan of the log (but for keys
  // whose records were found damaged, reported already); true if it does.
  bool compare_hint(const std::string& name, const LogScan& scan, const RecordMap& hinted,
                    const std::map<std::uint64_t, CacheKey>& damaged_keys,
                    std::vector<VerifyReport::Problem>& found) {
    const std::size_t before = found.size();
    for (const auto& [key, record] : scan.live) {
      auto it = hinted.find(key);
      if (it == hinted.end() || it->second.offset != record.offset) {
        found.push_back({log_path(name),
                         "entry " + key.hex() + " at offset " + std::to_string(record.offset) +
                             " is not in the hint file",
                         false});
      }
    }
    std::set<CacheKey> damaged;
    for (const auto& [offset, key] : damaged_keys) damaged.insert(key);
    for (const auto& [key, record] : hinted) {
      if (!record.removal() && !scan.live.contains(key) && !damaged.contains(key)) {
        found.push_back({hint_path(name),
                         "hint names entry " + key.hex() + " which the log does not hold", false});
      }
    }
    return found.size() > before || !damaged.empty();
  }

  // Writes a new log holding the good newest records of `scan` (damaged
  // bytes are copied to quarantine/ first) and its hint, and renames both
  // into place; the caller holds the append lock. Processes that hold the
  // old files notice on their next miss.
  Status compact(const std::string& name, const File& log, const LogScan& scan,
                 const std::map<std::uint64_t, CacheKey>& damaged_keys) {
    // The damaged records that held an entry are kept (up to a size: a
    // region of garbage can be any length); dead damaged bytes are dropped.
    for (const ScanStep& step : scan.damaged) {
      auto key = damaged_keys.find(step.record.offset);
      if (key == damaged_keys.end() || step.damaged > kMaxQuarantineCopy) continue;
      ByteBuffer bytes = ByteBuffer::allocate(step.damaged);
      if (log.read_at(step.record.offset, bytes.mutable_span()).is_ok()) {
        (void)quarantine_.keep_copy(name, key->second.hex(), bytes.span());
      }
    }
    std::vector<HintRecord> records;
    for (const auto& [key, record] : scan.live) records.push_back(record);
    auto compacted = write_compacted_log(env_, log, std::move(records), log_path(name),
                                         {options_.dir, options_.sync});
    if (!compacted) return compacted.status();
    Db db;
    db.generation = compacted->generation;
    for (const HintRecord& record : compacted->records) db.apply(record);
    db.read_end = compacted->end;
    return write_hint(name, db);
  }

  // Temporary files (`<db>.ukdb.tmp.*`, `<db>.ukdx.tmp.*`) older than an
  // hour: a writer that was killed before its rename left them.
  std::vector<std::string> stale_temp_files(const std::string& name) const {
    std::vector<std::string> files;
    auto names = env_.list_dir(options_.dir);
    if (!names) return files;
    const std::int64_t now = env_.now_unix();
    for (const auto& file : *names) {
      if (file.is_dir) continue;
      if (!file.name.starts_with(name + std::string(kLogSuffix) + ".tmp.") &&
          !file.name.starts_with(name + std::string(kHintSuffix) + ".tmp.")) {
        continue;
      }
      const std::string path = options_.dir + "/" + file.name;
      auto info = env_.file_info(path);
      if (info && info->type == FileType::kRegular &&
          now - info->modified_unix > kStaleTempSeconds) {
        files.push_back(path);
      }
    }
    return files;
  }

  // ---- locks, folders, quarantine ---------------------------------------

  // Whether `file`, just opened at `path`, is the regular file there and
  // not one a symbolic link leads to (another user's log, say): the tier
  // never follows a link in its folder. A link is a bad file (kCorruption:
  // moved aside); a file swapped between the open and the check is an
  // I/O error (a miss).
  Status opened_own_file(const std::string& path, const File& file) const {
    auto info = env_.file_info(path);
    if (!info) return info.status();
    if (info->type == FileType::kSymlink) {
      return Status::corruption(path +
                                " is a symbolic link; kcache does not follow links in its cache");
    }
    if (!(info->id == file.id())) return Status::io_error(path + " was replaced as it was opened");
    return Status::ok();
  }

  // Locks byte `offset` of <db>.locks. Something other than a plain file
  // where the lock file belongs (a folder, say) is moved aside like any bad
  // file, and the lock tried again, once. The content of a lock file is
  // never read, so garbage in it is harmless.
  Result<std::unique_ptr<FileLock>> lock_byte(const std::string& db, std::uint64_t offset) {
    const std::string path = options_.dir + "/" + db + std::string(kLocksSuffix);
    // A link there is moved aside first: locking opens the file read-write
    // and creates it, which must never happen at a link's target.
    if (auto info = env_.file_info(path); info && info->type == FileType::kSymlink) {
      events_.on_corrupt(this->name(), path, Status::corruption(path + " is a symbolic link"));
      quarantine_.move_in(db, path);
    }
    auto lock = env_.try_lock(path, offset);
    if (auto info = env_.file_info(path); !lock && info && info->type != FileType::kRegular) {
      events_.on_corrupt(this->name(), path,
                         Status::corruption("not a lock file: " + lock.status().message()));
      quarantine_.move_in(db, path);
      lock = env_.try_lock(path, offset);
    }
    return lock;
  }

  // The append lock of `name`, waited for up to `wait` (polling: the
  // holder is writing one entry).
  Result<std::unique_ptr<FileLock>> append_lock(const std::string& name,
                                                std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    auto pause = std::chrono::microseconds(100);
    while (true) {
      auto lock = lock_byte(name, kAppendLockOffset);
      if (!lock || *lock) return lock;
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status::timeout("another process has been writing to " + log_path(name) + " for " +
                               std::to_string(wait.count() / 1000) + " s");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }

  // Whether this process may write in the tier's folder (asked once).
  bool folder_writable() {
    std::lock_guard lock(mutex_);
    if (!folder_writable_) folder_writable_ = env_.check_writable(options_.dir).is_ok();
    return *folder_writable_;
  }

  Status ensure_dir(const std::string& dir) {
    {
      std::lock_guard lock(mutex_);
      if (created_dirs_.contains(dir)) return Status::ok();
    }
    if (Status s = env_.create_dirs(dir, userlog::kFolderMode); !s.is_ok()) return s;
    std::lock_guard lock(mutex_);
    created_dirs_.insert(dir);
    return Status::ok();
  }

  // Once per tier: a cache on a network file system works (records are
  // checked; locks go through the lock manager) but every hit reads over
  // the network.
  void warn_if_network() {
    {
      std::lock_guard lock(mutex_);
      if (std::exchange(network_checked_, true)) return;
    }
    const FileSystemInfo fs = env_.file_system(options_.dir);
    if (fs.kind == FileSystemKind::kNetwork) {
      log_.warn_once("UserDb:network:" + options_.dir, "UserDb",
                     "The user cache " + options_.dir + " is on a network file system (" + fs.name +
                         "): entries are still stored and served, but every hit reads over the "
                         "network and entries written on other machines may be seen late. For "
                         "speed, put the cache on a local disk (KCACHE_CUSTOM_CACHE_DIR)");
    } else if (fs.kind == FileSystemKind::kFuse) {
      log_.debug("UserDb", "the user cache " + options_.dir + " is on FUSE (perhaps sshfs)");
    }
  }

  std::string log_path(const std::string& name) const {
    return options_.dir + "/" + name + std::string(kLogSuffix);
  }
  std::string hint_path(const std::string& name) const {
    return options_.dir + "/" + name + std::string(kHintSuffix);
  }

  // Reports a bad file and moves it aside.
  void quarantine_file(const std::string& db, const std::string& path, const Status& problem) {
    events_.on_corrupt(this->name(), path, problem);
    quarantine_.move_in(db, path);
    forget(db);
  }

  const UserTierOptions options_;
  Env& env_;
  const Logger& log_;
  TierEvents& events_;
  const Quarantine quarantine_;
  std::mutex mutex_;  // guards the members below
  std::set<std::string> created_dirs_;
  std::map<std::string, std::shared_ptr<Db>, std::less<>> dbs_;
  std::optional<bool> folder_writable_;
  bool network_checked_ = false;
};

}  // namespace

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events) {
  return std::make_unique<UserTier>(std::move(options), env, log, events);
}

}  // namespace kcache
