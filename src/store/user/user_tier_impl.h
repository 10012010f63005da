// The user tier's class, shared by the files that implement its parts:
//   user_tier.cpp        the interface, reading and appending
//   user_tier_verify.cpp verify and repair
//   user_tier_files.cpp  locks, folders, links and quarantine
//   user_tier_limits.cpp use tables, limits, eviction and compaction
// Only those files include this header; everyone else uses
// make_user_tier() (user_tier.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/byte_buffer.h"
#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"
#include "store/user/eviction.h"
#include "store/user/log_compaction.h"
#include "store/user/quarantine.h"
#include "store/user/use_table.h"
#include "store/user/user_db.h"
#include "store/user/user_log.h"
#include "store/user/user_tier.h"

namespace kcache::userlog {

inline constexpr std::string_view kLogSuffix = ".ukdb";
inline constexpr std::string_view kHintSuffix = ".ukdx";
inline constexpr std::string_view kLocksSuffix = ".locks";
// Byte 0 of <db>.locks guards appends to the log; keys lock odd bytes.
inline constexpr std::uint64_t kAppendLockOffset = 0;
// How long `kcache prune` waits for another process's pass.
inline constexpr auto kPruneWait = std::chrono::seconds(60);
// How long a write waits for other processes' appends (each one entry and
// its fdatasync) before it gives up storing.
inline constexpr auto kAppendWait = std::chrono::seconds(10);
// Damaged log bytes larger than this are not copied to quarantine/.
inline constexpr std::uint64_t kMaxQuarantineCopy = 64u << 20;
// A temporary file older than this was left by a killed writer.
inline constexpr std::int64_t kStaleTempSeconds = 3600;
// The lock file whose byte 0 one eviction pass at a time holds (no
// database name starts with a dot).
inline constexpr std::string_view kMaintenanceLock = ".maintenance";

class UserTier final : public Tier {
 public:
  UserTier(UserTierOptions options, Env& env, const Logger& log, TierEvents& events)
      : options_(std::move(options)),
        env_(env),
        log_(log),
        events_(events),
        quarantine_(env, options_.dir) {}
  // Waits for an eviction pass this process runs in the background.
  ~UserTier() override;
  UserTier(const UserTier&) = delete;
  UserTier& operator=(const UserTier&) = delete;

  std::string_view name() const override { return "user"; }

  // Looks in the exact database, then in the arch-wide one: an entry
  // compiled for "sm_90" serves "sm_90_132" too (the key is the same).
  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override;

  Status put(const std::string& db, const Entry& entry,
             std::span<const std::uint8_t> encoded) override;

  Status ready_to_store() override;

  Status remove(const std::string& db, const CacheKey& key) override;

  Result<std::unique_ptr<FileLock>> try_lock(const std::string& db, const CacheKey& key) override;

  // Records the use in the database (of the two) that holds the key, when
  // this process has it open: an index lookup and, once a minute, the use
  // table's probe.
  void note_use(const DbNames& db, const CacheKey& key) override;

  Result<std::vector<std::string>> databases() const override;

  Result<std::vector<EntryInfo>> list(const std::string& db) const override;

  Result<std::vector<Entry>> read_all(const std::string& db) const override;

  Result<std::uint64_t> clear() override;

  Status verify(bool repair, VerifyReport& report) override;

  Result<PruneReport> prune(const PruneOptions& options) override;

  [[nodiscard]] Result<Usage> usage() const override;

 private:
  // ---- reading --------------------------------------------------------

  Result<std::optional<Entry>> get_from(const std::string& name, const CacheKey& key);

  // Reads the record `record` of `db` and checks it: the entry, or what is
  // wrong with it (kCorruption; `bytes` then holds what was read, empty
  // when the log is shorter than the record), or an I/O error.
  Result<Entry> read_entry(const Db& db, const HintRecord& record, ByteBuffer& bytes);
  // read_entry(), and what follows from its answer: a record that fails
  // its checks is looked for in the log (the hint may be what is wrong),
  // and is reported and removed only when the log holds no good record of
  // its key elsewhere. nullopt: the entry is not served.
  // `found.checked_epoch` says whether the mapped record was checked in
  // full already, and is moved when it is now (Db::learnt keeps it).
  Result<std::optional<Entry>> read_checked(const std::string& name, Db& db, Db::Found& found);
  // For a record that failed its checks: reads the whole log (once per open
  // database) and, if it holds a good record of the key somewhere else, the
  // hint was wrong: what `db` knows is replaced by the scan, the hint is
  // rebuilt, and that record returned. A record that verifies is never
  // discarded because the hint misplaced it.
  std::optional<HintRecord> recheck_against_log(const std::string& name, Db& db,
                                                const HintRecord& record);

  // What a lookup makes of a database that cannot be opened: something
  // other than a file where the log belongs, or a log with a bad header, is
  // moved aside like any bad file, but only under the append lock and after
  // looking again (a writer may have just replaced it): when another
  // process holds the lock, the write after the compile does it. Any other
  // failure (no permission, an I/O error) is a miss: the write after the
  // compile meets the same cause and reports it, so that one cause gives
  // one warning.
  Result<std::optional<Entry>> open_failure(const std::string& name, const Status& problem);

  // Moves the log of `name` aside, with one report, if it is still not a
  // usable log; the caller holds the append lock.
  Status quarantine_bad_log(const std::string& name);

  // The open database `name`: nullptr when it has no log (yet).
  Result<std::shared_ptr<Db>> db_for(const std::string& name);

  void forget(const std::string& name);

  // Opens the log of `name` (read-write when this process may write it)
  // and reads its hint; a hint that is missing or describes another log is
  // replaced by a scan of the log, and rebuilt when no one is appending.
  Result<std::shared_ptr<Db>> open_db(const std::string& name);

  // Writes the hint of `db` anew from what a scan of `scanned` bytes of
  // its log found, when this process may write and no one has appended
  // since; else leaves the hint as it is.
  void rewrite_hint_after_scan(const std::string& name, Db& db, std::uint64_t scanned);

  // Whether the files of `name` are no longer the ones `db` holds: cleared,
  // compacted, or a hint rebuilt by someone else.
  bool replaced(const std::string& name, const Db& db) const;

  // Reads the newest record of every key of `name` and calls `action` with
  // each entry that passes its checks (others are reported and removed).
  template <class Action>
  Status for_each_entry(const std::string& name, Action&& action);

  // ---- writing --------------------------------------------------------

  // Appends `bytes` (an encoded entry, or a removal) for `key` to the log
  // of `name`, then its hint record. A failed append is cut off again.
  Status append(const std::string& name, const CacheKey& key, std::span<const std::uint8_t> bytes,
                bool removal = false);

  // append() once the append lock is held and `d` caught up.
  Status append_locked(const std::string& name, Db& d, const CacheKey& key,
                       std::span<const std::uint8_t> bytes, bool removal);

  // The database `name` ready for an append; the caller holds its append
  // lock. Creates the log when missing (a bad one is moved aside first),
  // rebuilds a hint that does not match it, and catches the hint up with
  // the log: records a killed writer appended without their hint records
  // are added, and damaged bytes that end the log (a write cut short) are
  // cut off.
  Result<std::shared_ptr<Db>> db_for_append(const std::string& name);

  Result<std::shared_ptr<Db>> open_for_append(const std::string& name);

  // Brings the hint of `db` up to the log's end; the caller holds the
  // append lock.
  Status catch_up(const std::string& name, Db& db);

  // Writes a new hint for `db` (its newest records) and renames it into
  // place; the caller holds the append lock.
  Status write_hint(const std::string& name, Db& db);

  // Reports a record that failed its checks, copies its bytes to
  // quarantine/, and appends a removal so that no one reads it again (when
  // the record is still its key's newest).
  void damaged(const std::string& name, const Generation& generation, const HintRecord& record,
               const ByteBuffer& bytes, const Status& problem);

  // ---- verify ---------------------------------------------------------

  // `still`: no process can append to the log (a folder no one may write
  // in), so the append lock is not taken (it could not be opened there).
  void verify_db(const std::string& name, bool repair, bool still, VerifyReport& report);

  // The records the hint file of `name` holds, when it describes the log
  // of `generation`; adds what is wrong with the file itself to `found`.
  RecordIndex read_hint_file(const std::string& name, const Generation& generation,
                             std::vector<VerifyReport::Problem>& found);

  // Adds where the hint disagrees with a scan of the log (but for keys
  // whose records were found damaged, reported already); true if it does.
  bool compare_hint(const std::string& name, const LogScan& scan, const RecordIndex& hinted,
                    const std::map<std::uint64_t, CacheKey>& damaged_keys,
                    std::vector<VerifyReport::Problem>& found);

  // Writes a new log holding the good newest records of `scan` (damaged
  // bytes are copied to quarantine/ first) and its hint, and renames both
  // into place; the caller holds the append lock. Processes that hold the
  // old files notice on their next miss.
  Status compact(const std::string& name, const File& log, const LogScan& scan,
                 const std::map<std::uint64_t, CacheKey>& damaged_keys);

  // Temporary files (`<db>.ukdb.tmp.*`, `<db>.ukdx.tmp.*`, but for those
  // of compactions, verify_db's) older than an hour: a writer that was
  // killed before its rename left them.
  std::vector<std::string> stale_temp_files(const std::string& name) const;

  // ---- use tables, limits, eviction -----------------------------------

  // Records that `found`'s key of `db` was used now (a hit): once a minute
  // per entry and process, a load and a store in the shared table (none
  // while `found.used_minute`, which this moves, says it was done this
  // minute); no system call.
  void record_use(const std::string& name, Db& db, Db::Found& found);
  // The table of `db`: the one open, or, when there is none or it was
  // retired, the one on disk (tried once a minute, or now when `force`).
  UseTable* use_table(const std::string& name, Db& db, std::uint32_t now, bool force);
  // A put's use: the table made, or rebuilt larger when it fills; the
  // caller holds the append lock.
  void stamp_use(const std::string& name, Db& db, const CacheKey& key);

  // After a put: when the folder is past a limit (or an age pass is due),
  // an eviction pass starts in the background, unless one runs already.
  void after_put();
  // Whether the folder is past the size or count limit, by its files'
  // sizes (one listing; hint records count dead entries too).
  bool past_limits(const Limits& limits) const;
  // One pass: brings the folder within `limits`, under the maintenance
  // lock, waited for up to `wait` (report.ran is false when another
  // process holds it still; a background pass does not wait).
  Status run_pass(const Limits& limits, std::chrono::milliseconds wait, PruneReport& report);
  // Writes a new log of `name` holding `records` (of `log`), and commits
  // it (commit_compaction); the caller holds the append lock.
  Status compact_records(const std::string& name, const File& log, std::vector<HintRecord> records);
  // Compacts `name` without the records at `evicted` offsets: what is
  // kept is copied without the append lock, which is then taken to copy
  // the records appended since and rename (records appended since the
  // pass looked are kept).
  Status compact_without(const std::string& name, const std::set<std::uint64_t>& evicted);
  // Renames the new log `writer` wrote into place, then writes its hint
  // and its use table (minutes carried over); the caller holds the append
  // lock. Processes that hold the old files notice on their next miss.
  Status commit_compaction(const std::string& name, CompactionWriter& writer);
  CompactionOptions compaction_options() const {
    return {options_.dir, options_.sync, file_mode()};
  }

  // The open database `name`, opened anew when its files were replaced,
  // caught up with its hint and its log; nullptr when it has no usable log.
  std::shared_ptr<Db> current_db(const std::string& name);
  // The sizes of its log, hint and use table (0 for one that is missing).
  struct FileSizes {
    std::uint64_t log = 0, hint = 0, use = 0;
    [[nodiscard]] std::uint64_t total() const { return log + hint + use; }
  };
  FileSizes file_sizes(const std::string& name) const;

  // Removes the temporary files of compactions of `name` killed before
  // their rename (under its append lock; nothing when none is there).
  void sweep_abandoned_compactions(const std::string& name);

  // Removes the use tables whose log is gone (moved to quarantine, say).
  void remove_orphan_use_tables();

  std::string use_path(const std::string& name) const;

  // ---- locks, folders, quarantine ---------------------------------------

  // Whether `file`, just opened at `path`, is the regular file there and
  // not one a symbolic link leads to (another user's log, say): the tier
  // never follows a link in its folder. A link is a bad file (kCorruption:
  // moved aside); a file swapped between the open and the check is an
  // I/O error (a miss).
  Status opened_own_file(const std::string& path, const File& file) const;

  // Locks byte `offset` of <db>.locks. Something other than a plain file
  // where the lock file belongs (a folder, say) is moved aside like any bad
  // file, and the lock tried again, once. The content of a lock file is
  // never read, so garbage in it is harmless.
  Result<std::unique_ptr<FileLock>> lock_byte(const std::string& db, std::uint64_t offset);

  // The append lock of `name`, waited for up to `wait` (polling: the
  // holder is writing one entry).
  Result<std::unique_ptr<FileLock>> append_lock(const std::string& name,
                                                std::chrono::milliseconds wait);
  // Byte `offset` of <db>.locks, waited for up to `wait`; the timeout
  // says the holder has been `doing` so long.
  Result<std::unique_ptr<FileLock>> wait_for_lock(const std::string& db, std::uint64_t offset,
                                                  std::chrono::milliseconds wait,
                                                  const std::string& doing);

  // Whether this process may write in the tier's folder (asked once).
  bool folder_writable();
  // The mode files and folders are made with (the umask applies).
  mode_t file_mode() const { return options_.shared ? 0666 : 0600; }
  mode_t folder_mode() const { return options_.shared ? 0777 : kFolderMode; }

  // The reason the tier's folder is not used (said once), or nullptr when
  // it may be. Unless the cache is shared, a folder another user could
  // write is refused (env/trusted_path.h). The hot path is one atomic
  // load: the folder is judged on the first call, and a folder that did
  // not exist then is judged again (check_trust) when it is made or its
  // first log opened, so that a folder someone else made first is caught.
  const std::string* refusal() {
    const int trust = trust_.load(std::memory_order_acquire);
    if (trust == kTrusted || trust == kAbsent) return nullptr;
    return trust == kRefused ? &refusal_ : check_trust();
  }
  // Judges the folder now (a refusal is final).
  const std::string* check_trust();

  Status ensure_dir(const std::string& dir);

  // Once per tier: a cache on a network file system works (records are
  // checked; locks go through the lock manager) but every hit reads over
  // the network.
  void warn_if_network();

  std::string log_path(const std::string& name) const;
  std::string hint_path(const std::string& name) const;

  // Reports a bad file and moves it aside.
  void quarantine_file(const std::string& db, const std::string& path, const Status& problem);

  const UserTierOptions options_;
  Env& env_;
  const Logger& log_;
  TierEvents& events_;
  const Quarantine quarantine_;
  std::mutex mutex_;  // guards the members below
  std::set<std::string> created_dirs_;
  std::map<std::string, std::shared_ptr<Db>, std::less<>> dbs_;
  // Databases whose killed compactions this process has swept (once each,
  // by the first append).
  std::set<std::string, std::less<>> swept_;
  std::optional<bool> folder_writable_;
  // kAbsent: judged when it did not exist, by the folders above it.
  static constexpr int kUnknown = 0, kAbsent = 1, kTrusted = 2, kRefused = 3;
  std::atomic<int> trust_{kUnknown};
  std::string refusal_;         // set once, before trust_ becomes kRefused
  std::string refusal_reason_;  // the same, for verify: "not used: ..."

  bool network_checked_ = false;

  // The background eviction pass (after_put): at most one per process.
  std::mutex maintenance_mutex_;  // guards the members below
  std::condition_variable maintenance_done_;
  bool maintaining_ = false;
  pid_t maintainer_ = 0;  // the process that started it (fork)
  std::int64_t last_age_pass_ = 0;
};

}  // namespace kcache::userlog
