#include "store/user/maintenance.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "store/user/log_compaction.h"
#include "store/user/use_table.h"

namespace kcache::userlog {
namespace {

// What one entry costs beside its record: its hint record.
constexpr std::uint64_t kEntryOverhead = kHintRecordSize;
// A database is compacted when this fraction of its log is dead.
constexpr std::uint64_t kDeadShare = 4;  // a quarter

}  // namespace

Maintenance::~Maintenance() {
  MutexLock lock(mutex_);
  // A child of fork() has no thread to wait for.
  if (maintaining_ && maintainer_ == ::getpid()) {
    while (maintaining_) done_.wait(mutex_);
  }
}

bool Maintenance::past_limits(const Limits& limits) const {
  if (limits.max_bytes == 0 && limits.max_entries == 0) return false;
  auto names = folder_.env.list_dir(folder_.options.dir);
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
    auto info = folder_.env.file_info(folder_.options.dir + "/" + file.name);
    if (!info || info->type != FileType::kRegular) continue;
    bytes += info->size;
    if (hint && info->size > kHeaderSize) records += (info->size - kHeaderSize) / kHintRecordSize;
  }
  return (limits.max_bytes > 0 && bytes > limits.max_bytes) ||
         (limits.max_entries > 0 && records > limits.max_entries);
}

void Maintenance::after_put() {
  const Limits& limits = folder_.options.limits;
  if (!limits.any()) return;
  const std::int64_t now = folder_.env.now_unix();
  MutexLock lock(mutex_);
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
          folder_.log.debug("UserDb", "eviction pass: " + s.message());
        }
        if (report.ran) {
          folder_.log.info("UserDb", "eviction pass over " + folder_.options.dir + ": " +
                                         std::to_string(report.evicted) + " evicted, " +
                                         std::to_string(report.expired) + " expired, " +
                                         std::to_string(report.entries_before) + " -> " +
                                         std::to_string(report.entries_after) + " entries, " +
                                         std::to_string(report.bytes_before) + " -> " +
                                         std::to_string(report.bytes_after) + " bytes");
        }
        MutexLock done(mutex_);
        if (pass < 8 && report.ran && past_limits(limits)) continue;
        maintaining_ = false;
        // Notified under the lock: the destructor may free the tier as
        // soon as it sees the pass done.
        done_.notify_all();
        return;
      }
    }).detach();
  } catch (const std::system_error& e) {
    maintaining_ = false;  // no thread to be had: the next put tries again
    folder_.log.debug("UserDb", std::string("cannot start an eviction pass: ") + e.what());
  }
}

Status Maintenance::run_pass(const Limits& limits, std::chrono::milliseconds wait,
                             PruneReport& report) {
  Env& env = folder_.env;
  report.max_size = limits.max_bytes;
  report.max_entries = limits.max_entries;
  report.max_age_seconds = limits.max_age_seconds;
  if (!env.exists(folder_.options.dir)) return Status::ok();  // nothing stored yet
  auto held = folder_.wait_for_lock(std::string(kMaintenanceLock), 0, wait,
                                    "evicting from " + folder_.options.dir);
  if (!held && held.status().code() != StatusCode::kTimeout) return held.status();
  if (!held || *held == nullptr) {
    report.ran = false;
    return Status::ok();
  }
  auto names = dbs_.names();
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
  const std::uint32_t now = minute_of(env.now_unix());
  for (const std::string& name : *names) {
    std::shared_ptr<Db> db = dbs_.current_db(name);
    if (db == nullptr) continue;  // no log, or a bad one: verify's
    DbState state{name, db->records(), 0};
    const UserFolder::FileSizes sizes = folder_.file_sizes(name);
    report.bytes_before += sizes.total();
    const std::uint64_t log_bytes = sizes.log;
    const std::uint64_t use_bytes = sizes.use;
    // An entry absent from the table was last used before it was made; a
    // database without one counts as used when its log last changed.
    UseTable* table = db->writable ? uses_.use_table(name, *db, now, /*force=*/true) : nullptr;
    std::uint32_t baseline = table ? table->made() : now;
    if (table == nullptr) {
      if (auto info = env.file_info(folder_.log_path(name))) {
        baseline = minute_of(info->modified_unix);
      }
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

  const EvictionPlan plan = plan_eviction(candidates, limits, env.now_unix(), fixed);
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
    if (Status s = compactor_.compact_without(state.name, evicted); !s.is_ok()) {
      folder_.log.debug("UserDb",
                        "cannot compact " + folder_.log_path(state.name) + ": " + s.message());
      if (first_failure.is_ok()) first_failure = s;
      continue;
    }
    ++report.databases_compacted;
    // Counted once the compaction is in place: a pass killed before its
    // rename evicted nothing.
    report.expired += expired;
    report.evicted += evicted.size() - expired;
    if (!evicted.empty()) folder_.events.on_evicted(kTierName, evicted.size() - expired, expired);
  }
  for (const DbState& state : states) {
    report.bytes_after += folder_.file_sizes(state.name).total();
    if (auto db = dbs_.db_for(state.name); db && *db) report.entries_after += (*db)->size();
  }
  return first_failure;
}

void Maintenance::sweep_abandoned_compactions(const std::string& name) {
  const std::string log_path = folder_.log_path(name);
  if (abandoned_compactions(folder_.env, log_path).empty()) return;
  // Under the append lock: only its holder compacts, so what is there is
  // what a killed pass left.
  auto lock = folder_.append_lock(name, kAppendWait);
  if (lock && *lock) remove_abandoned_compactions(folder_.env, log_path);
}

void Maintenance::remove_orphan_use_tables() {
  Env& env = folder_.env;
  auto files = env.list_dir(folder_.options.dir);
  if (!files) return;
  for (const auto& file : *files) {
    if (file.is_dir || !file.name.ends_with(kUseSuffix) || file.name.size() == kUseSuffix.size()) {
      continue;
    }
    const std::string name = file.name.substr(0, file.name.size() - kUseSuffix.size());
    if (env.file_info(folder_.log_path(name)).status().code() != StatusCode::kNotFound) continue;
    // Under the append lock: a writer making the log anew is not undone.
    auto lock = folder_.lock_byte(name, kAppendLockOffset);
    if (!lock || *lock == nullptr) continue;
    if (env.file_info(folder_.log_path(name)).status().code() == StatusCode::kNotFound) {
      (void)env.remove_file(folder_.use_path(name));
    }
  }
}

}  // namespace kcache::userlog
