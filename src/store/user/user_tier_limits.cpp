// The user tier's limits: use tables, the eviction pass, compaction
// (docs/design.md §3.9, "Limits and eviction").
#include <unistd.h>

#include <shared_mutex>
#include <thread>

#include "store/user/log_compaction.h"
#include "store/user/user_tier_impl.h"

namespace kcache::userlog {
namespace {

// What one entry costs beside its record: its hint record.
constexpr std::uint64_t kEntryOverhead = kHintRecordSize;
// A database is compacted when this fraction of its log is dead.
constexpr std::uint64_t kDeadShare = 4;  // a quarter

}  // namespace

UserTier::~UserTier() {
  std::unique_lock lock(maintenance_mutex_);
  // A child of fork() has no thread to wait for.
  if (maintaining_ && maintainer_ == ::getpid()) {
    maintenance_done_.wait(lock, [&] { return !maintaining_; });
  }
}

std::string UserTier::use_path(const std::string& name) const {
  return options_.dir + "/" + name + std::string(kUseSuffix);
}

// ---- use tables -----------------------------------------------------------

void UserTier::record_use(const std::string& name, Db& db, Db::Found& found) {
  if (!db.writable) return;
  const std::uint32_t now = minute_of(env_.now_unix());
  // Minutes only grow in the table: one this process put there stands.
  if (found.used_minute >= now) return;
  UseTable* table = db.uses.table.load(std::memory_order_acquire);
  if (table == nullptr || table->retired()) table = use_table(name, db, now, /*force=*/false);
  if (table == nullptr) return;
  table->touch(found.record.key, now);
  found.used_minute = now;
}

void UserTier::note_use(const DbNames& names, const CacheKey& key) {
  for (const std::string* name : {&names.exact, &names.arch}) {
    std::shared_ptr<Db> db;
    {
      std::lock_guard lock(mutex_);
      auto it = dbs_.find(*name);
      if (it == dbs_.end()) continue;
      db = it->second;
    }
    if (auto found = db->lookup(key)) {
      record_use(*name, *db, *found);
      db->learnt(*found);
      return;
    }
  }
}

UseTable* UserTier::use_table(const std::string& name, Db& db, std::uint32_t now, bool force) {
  std::lock_guard lock(db.uses.mutex);
  UseTable* table = db.uses.table.load(std::memory_order_relaxed);
  if (table != nullptr && !table->retired()) return table;
  if (!force && db.uses.tried_minute == now) return table;
  db.uses.tried_minute = now;
  const std::string path = use_path(name);
  auto file = env_.open_file(path, OpenMode::kReadWrite);
  if (!file || !opened_own_file(path, **file).is_ok()) return table;
  auto opened = UseTable::open(std::move(*file), path);
  if (!opened) {
    log_.debug("UserDb", opened.status().message());
    return table;
  }
  table = opened->get();
  db.uses.opened.push_back(std::move(*opened));
  db.uses.table.store(table, std::memory_order_release);
  return table;
}

void UserTier::stamp_use(const std::string& name, Db& db, const CacheKey& key) {
  const std::uint32_t now = minute_of(env_.now_unix());
  UseTable* table = use_table(name, db, now, /*force=*/true);
  std::size_t keys = 0;
  {
    std::shared_lock lock(db.mutex);
    keys = db.newest.size();
  }
  if (table == nullptr || table->too_full_for(keys)) {
    // Made anew, twice as large, with what the old one knew.
    std::vector<Use> uses;
    {
      std::shared_lock lock(db.mutex);
      uses.reserve(db.newest.size());
      db.newest.for_each([&](const IndexedRecord& r) {
        if (r.record.removal()) return;
        if (auto minute = table ? table->last_use(r.record.key) : std::nullopt) {
          uses.push_back({r.record.key, *minute});
        }
      });
    }
    const std::uint32_t made = table ? table->made() : now;
    if (Status s =
            UseTable::write(env_, use_path(name), db.generation, keys + 1, uses, made, file_mode());
        !s.is_ok()) {
      log_.debug("UserDb", "cannot write " + use_path(name) + ": " + s.message());
      return;
    }
    if (table != nullptr) table->retire();
    table = use_table(name, db, now, /*force=*/true);
  }
  if (table != nullptr) table->touch(key, now);
}

// ---- the eviction pass ------------------------------------------------------

bool UserTier::past_limits(const Limits& limits) const {
  if (limits.max_bytes == 0 && limits.max_entries == 0) return false;
  auto names = env_.list_dir(options_.dir);
  if (!names) return false;
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;  // hint records: live entries and dead ones
  for (const auto& file : *names) {
    const bool hint = file.name.ends_with(kHintSuffix);
    // A killed compaction's temporary file takes space until it is swept.
    if (file.is_dir || !(hint || file.name.ends_with(kLogSuffix) ||
                         file.name.ends_with(kUseSuffix) || is_compaction_temp(file.name))) {
      continue;
    }
    auto info = env_.file_info(options_.dir + "/" + file.name);
    if (!info || info->type != FileType::kRegular) continue;
    bytes += info->size;
    if (hint && info->size > kHeaderSize) records += (info->size - kHeaderSize) / kHintRecordSize;
  }
  return (limits.max_bytes > 0 && bytes > limits.max_bytes) ||
         (limits.max_entries > 0 && records > limits.max_entries);
}

void UserTier::after_put() {
  const Limits& limits = options_.limits;
  if (!limits.any()) return;
  const std::int64_t now = env_.now_unix();
  std::lock_guard lock(maintenance_mutex_);
  if (maintaining_ && maintainer_ != ::getpid()) maintaining_ = false;  // forked
  // A pass that runs looks at the folder again before it ends.
  if (maintaining_) return;
  const bool age_due =
      limits.max_age_seconds > 0 &&
      now - last_age_pass_ >= std::max<std::int64_t>(60, limits.max_age_seconds / 8);
  if (!age_due && !past_limits(limits)) return;
  maintaining_ = true;
  maintainer_ = ::getpid();
  last_age_pass_ = now;
  try {
    std::thread([this, limits] {
      // Puts go on meanwhile: the pass runs again while they have taken
      // the folder past a limit (looked at under the lock that a put's
      // after_put takes, so that no put is left unlooked at).
      for (int pass = 0;; ++pass) {
        PruneReport report;
        if (Status s = run_pass(limits, std::chrono::milliseconds(0), report); !s.is_ok()) {
          log_.debug("UserDb", "eviction pass: " + s.message());
        }
        if (report.ran) {
          log_.info("UserDb", "eviction pass over " + options_.dir + ": " +
                                  std::to_string(report.evicted) + " evicted, " +
                                  std::to_string(report.expired) + " expired, " +
                                  std::to_string(report.entries_before) + " -> " +
                                  std::to_string(report.entries_after) + " entries, " +
                                  std::to_string(report.bytes_before) + " -> " +
                                  std::to_string(report.bytes_after) + " bytes");
        }
        std::lock_guard done(maintenance_mutex_);
        if (pass < 8 && report.ran && past_limits(limits)) continue;
        maintaining_ = false;
        // Notified under the lock: the destructor may free the tier as
        // soon as it sees the pass done.
        maintenance_done_.notify_all();
        return;
      }
    }).detach();
  } catch (const std::system_error& e) {
    maintaining_ = false;  // no thread to be had: the next put tries again
    log_.debug("UserDb", std::string("cannot start an eviction pass: ") + e.what());
  }
}

std::shared_ptr<Db> UserTier::current_db(const std::string& name) {
  auto db = db_for(name);
  if (db && *db && replaced(name, **db)) {
    forget(name);
    db = db_for(name);
  }
  if (!db || *db == nullptr) return nullptr;
  std::unique_lock lock((*db)->mutex);
  (*db)->read_hint();
  (*db)->read_past_hint();
  return *db;
}

UserTier::FileSizes UserTier::file_sizes(const std::string& name) const {
  FileSizes sizes;
  for (auto [path, size] :
       {std::pair{log_path(name), &sizes.log}, std::pair{hint_path(name), &sizes.hint},
        std::pair{use_path(name), &sizes.use}}) {
    auto info = env_.file_info(path);
    if (info && info->type == FileType::kRegular) *size = info->size;
  }
  return sizes;
}

Result<Tier::Usage> UserTier::usage() const {
  auto* self = const_cast<UserTier*>(this);  // opening a database is not a change
  if (const std::string* refused = self->refusal()) return Status::unavailable(*refused);
  auto names = databases();
  if (!names) return names.status();
  Usage usage;
  for (const std::string& name : *names) {
    std::shared_ptr<Db> db = self->current_db(name);
    if (db == nullptr) continue;
    ++usage.databases;
    usage.entries += db->size();
    usage.bytes += file_sizes(name).total();
  }
  return usage;
}

Result<PruneReport> UserTier::prune(const PruneOptions& options) {
  if (const std::string* refused = refusal()) return Status::unavailable(*refused);
  Limits limits = options_.limits;
  if (options.max_size) limits.max_bytes = *options.max_size;
  if (options.max_entries) limits.max_entries = *options.max_entries;
  if (options.max_age) limits.max_age_seconds = options.max_age->count();
  PruneReport report;
  if (Status s = run_pass(limits, kPruneWait, report); !s.is_ok()) return s;
  return report;
}

Status UserTier::run_pass(const Limits& limits, std::chrono::milliseconds wait,
                          PruneReport& report) {
  report.max_size = limits.max_bytes;
  report.max_entries = limits.max_entries;
  report.max_age_seconds = limits.max_age_seconds;
  if (!env_.exists(options_.dir)) return Status::ok();  // nothing stored yet
  auto held =
      wait_for_lock(std::string(kMaintenanceLock), 0, wait, "evicting from " + options_.dir);
  if (!held && held.status().code() != StatusCode::kTimeout) return held.status();
  if (!held || *held == nullptr) {
    report.ran = false;
    return Status::ok();
  }
  auto names = databases();
  if (!names) return names.status();
  remove_orphan_use_tables();
  for (const std::string& name : *names) sweep_abandoned_compactions(name);
  // Past a limit by the files' sizes: every database with dead records is
  // compacted, so that the files say what the pass made of them.
  const bool past = past_limits(limits);

  struct DbState {
    std::string name;
    std::vector<HintRecord> records;
    std::uint64_t dead = 0;  // log bytes no live record holds
  };
  std::vector<DbState> states;
  std::vector<Candidate> candidates;
  std::uint64_t fixed = 0;
  const std::uint32_t now = minute_of(env_.now_unix());
  for (const std::string& name : *names) {
    std::shared_ptr<Db> db = current_db(name);
    if (db == nullptr) continue;  // no log, or a bad one: verify's
    DbState state{name, db->records(), 0};
    const FileSizes sizes = file_sizes(name);
    report.bytes_before += sizes.total();
    const std::uint64_t log_bytes = sizes.log;
    const std::uint64_t use_bytes = sizes.use;
    // An entry absent from the table was last used before it was made; a
    // database without one counts as used when its log last changed.
    UseTable* table = db->writable ? use_table(name, *db, now, /*force=*/true) : nullptr;
    std::uint32_t baseline = table ? table->made() : now;
    if (table == nullptr) {
      if (auto info = env_.file_info(log_path(name))) baseline = minute_of(info->modified_unix);
    }
    std::uint64_t live = kHeaderSize;
    for (const HintRecord& record : state.records) {
      candidates.push_back({padded(record.size) + kEntryOverhead,
                            table ? table->last_use(record.key).value_or(baseline) : baseline});
      live += padded(record.size);
    }
    state.dead = log_bytes > live ? log_bytes - live : 0;
    // The headers, and the use table as large as it is (a compaction
    // makes it anew for what is kept, no larger).
    fixed += 2 * kHeaderSize + use_bytes;
    report.entries_before += state.records.size();
    states.push_back(std::move(state));
  }

  const EvictionPlan plan = plan_eviction(candidates, limits, env_.now_unix(), fixed);
  std::size_t next = 0;
  Status first_failure;
  for (const DbState& state : states) {
    std::set<std::uint64_t> evicted;
    std::uint64_t live = 0;
    std::uint64_t expired = 0;
    for (const HintRecord& record : state.records) {
      const std::size_t i = next++;
      if (plan.evict[i]) {
        evicted.insert(record.offset);
        expired += plan.for_age[i] ? 1 : 0;
      } else {
        live += padded(record.size);
      }
    }
    const bool wasteful = state.dead > 4096 && state.dead * kDeadShare > state.dead + live;
    if (evicted.empty() && !wasteful && !(past && state.dead > 0)) continue;
    if (Status s = compact_without(state.name, evicted); !s.is_ok()) {
      log_.debug("UserDb", "cannot compact " + log_path(state.name) + ": " + s.message());
      if (first_failure.is_ok()) first_failure = s;
      continue;
    }
    ++report.databases_compacted;
    // Counted once the compaction is in place: a pass killed before its
    // rename evicted nothing.
    report.expired += expired;
    report.evicted += evicted.size() - expired;
    if (!evicted.empty()) events_.on_evicted(name(), evicted.size() - expired, expired);
  }
  for (const DbState& state : states) {
    report.bytes_after += file_sizes(state.name).total();
    if (auto db = db_for(state.name); db && *db) report.entries_after += (*db)->size();
  }
  return first_failure;
}

void UserTier::sweep_abandoned_compactions(const std::string& name) {
  if (abandoned_compactions(env_, log_path(name)).empty()) return;
  // Under the append lock: only its holder compacts, so what is there is
  // what a killed pass left.
  auto lock = append_lock(name, kAppendWait);
  if (lock && *lock) remove_abandoned_compactions(env_, log_path(name));
}

void UserTier::remove_orphan_use_tables() {
  auto files = env_.list_dir(options_.dir);
  if (!files) return;
  for (const auto& file : *files) {
    if (file.is_dir || !file.name.ends_with(kUseSuffix) || file.name.size() == kUseSuffix.size()) {
      continue;
    }
    const std::string name = file.name.substr(0, file.name.size() - kUseSuffix.size());
    if (env_.file_info(log_path(name)).status().code() != StatusCode::kNotFound) continue;
    // Under the append lock: a writer making the log anew is not undone.
    auto lock = lock_byte(name, kAppendLockOffset);
    if (!lock || *lock == nullptr) continue;
    if (env_.file_info(log_path(name)).status().code() == StatusCode::kNotFound) {
      (void)env_.remove_file(use_path(name));
    }
  }
}

Status UserTier::compact_without(const std::string& name, const std::set<std::uint64_t>& evicted) {
  // What is kept is copied without the append lock: a pass stopped or
  // slowed here (SIGSTOP, a slow disk) holds up no writer. The lock is
  // taken to copy what writers appended meanwhile, and to rename.
  std::shared_ptr<Db> seen = current_db(name);
  if (seen == nullptr) return Status::ok();
  Generation generation;
  std::uint64_t copied_end = kHeaderSize;  // records before it are copied or dropped
  {
    std::shared_lock read(seen->mutex);
    generation = seen->generation;
    copied_end = seen->read_end;
  }
  std::vector<HintRecord> kept;
  for (const HintRecord& record : seen->records()) {
    if (record.offset < copied_end && !evicted.contains(record.offset)) kept.push_back(record);
  }
  auto writer = CompactionWriter::start(env_, log_path(name), compaction_options());
  if (!writer) return writer.status();
  if (Status s = (*writer)->copy(*seen->log, std::move(kept)); !s.is_ok()) return s;
  if (Status s = (*writer)->settle(); !s.is_ok()) return s;

  auto lock = append_lock(name, kAppendWait);
  if (!lock) return lock.status();
  auto db = db_for_append(name);
  if (!db) return db.status();
  if ((*db)->generation != generation) {
    return Status::unavailable(log_path(name) + " was replaced while it was compacted");
  }
  // Each key's newest record past what was copied: an entry written, or a
  // removal (kept, so that a scan of the new log does not bring back what
  // it removes).
  std::vector<HintRecord> appended;
  std::vector<CacheKey> removed;
  {
    std::shared_lock read((*db)->mutex);
    (*db)->newest.for_each([&](const IndexedRecord& r) {
      if (r.record.offset < copied_end) return;
      if (r.record.removal()) {
        removed.push_back(r.record.key);
      } else {
        appended.push_back(r.record);
      }
    });
  }
  if (Status s = (*writer)->copy(*(*db)->log, std::move(appended)); !s.is_ok()) return s;
  for (const CacheKey& key : removed) {
    if (Status s = (*writer)->remove(key); !s.is_ok()) return s;
  }
  return commit_compaction(name, **writer);
}

Status UserTier::compact_records(const std::string& name, const File& log,
                                 std::vector<HintRecord> records) {
  remove_abandoned_compactions(env_, log_path(name));
  auto writer = CompactionWriter::start(env_, log_path(name), compaction_options());
  if (!writer) return writer.status();
  if (Status s = (*writer)->copy(log, std::move(records)); !s.is_ok()) return s;
  return commit_compaction(name, **writer);
}

Status UserTier::commit_compaction(const std::string& name, CompactionWriter& writer) {
  // The old table, opened before the files are replaced: its minutes
  // carry over.
  std::unique_ptr<UseTable> old;
  if (auto file = env_.open_file(use_path(name), OpenMode::kReadWrite);
      file && opened_own_file(use_path(name), **file).is_ok()) {
    if (auto opened = UseTable::open(std::move(*file), use_path(name))) {
      old = std::move(*opened);
    }
  }
  auto compacted = writer.commit();
  if (!compacted) return compacted.status();
  forget(name);
  Db db;
  db.generation = compacted->generation;
  db.newest.apply_all(compacted->records);
  db.read_end = compacted->end;
  Status hinted = write_hint(name, db);
  const std::uint32_t made = old ? old->made() : minute_of(env_.now_unix());
  std::vector<Use> uses;
  for (const HintRecord& record : db.records()) {
    uses.push_back({record.key, old ? old->last_use(record.key).value_or(made) : made});
  }
  if (Status s = UseTable::write(env_, use_path(name), compacted->generation, uses.size(), uses,
                                 made, file_mode());
      !s.is_ok()) {
    log_.debug("UserDb", "cannot write " + use_path(name) + ": " + s.message());
  }
  if (old) old->retire();
  return hinted;
}

}  // namespace kcache::userlog
