// The user tier (user_tier.h) as a Tier: it wires the objects that do the
// work, one job each, and answers the interface with them:
//   user_folder.h   options, paths, modes and byte locks, shared by all
//   folder_trust.h  whether the folder may be used; made, writable, network
//   user_dbs.h      the databases open in this process; hints rewritten
//   use_tracker.h   each entry's last use, in the use tables
//   appender.h      appends and their hint records; damaged records
//   user_reader.h   lookups and listings, each record checked
//   db_compactor.h  a log rewritten without what is dead, and committed
//   user_verifier.h verify and repair
//   maintenance.h   limits: the eviction pass, in the background after puts
#include "store/user/user_tier.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/mutex.h"
#include "format/entry.h"
#include "store/user/appender.h"
#include "store/user/db_compactor.h"
#include "store/user/folder_trust.h"
#include "store/user/maintenance.h"
#include "store/user/use_tracker.h"
#include "store/user/user_dbs.h"
#include "store/user/user_folder.h"
#include "store/user/user_reader.h"
#include "store/user/user_verifier.h"

namespace kcache::userlog {
namespace {

class UserTier final : public Tier {
 public:
  UserTier(UserTierOptions options, Env& env, const Logger& log, TierEvents& events)
      : folder_(std::move(options), env, log, events),
        trust_(folder_),
        dbs_(folder_, trust_),
        uses_(folder_),
        appender_(folder_, trust_, dbs_, uses_),
        reader_(folder_, trust_, dbs_, uses_, appender_),
        compactor_(folder_, dbs_, appender_),
        verifier_(folder_, trust_, dbs_, compactor_),
        maintenance_(folder_, dbs_, uses_, compactor_) {}
  UserTier(const UserTier&) = delete;
  UserTier& operator=(const UserTier&) = delete;

  std::string_view name() const override { return kTierName; }

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
  UserFolder folder_;
  FolderTrust trust_;
  UserDbs dbs_;
  UseTracker uses_;
  Appender appender_;
  UserReader reader_;
  DbCompactor compactor_;
  UserVerifier verifier_;
  // Last: destroyed first, it waits for the background pass, which uses
  // the others.
  Maintenance maintenance_;
};

Result<std::optional<Entry>> UserTier::get(const DbNames& db, const CacheKey& key) {
  auto found = reader_.get_from(db.exact, key);
  if (!found || found->has_value() || db.arch == db.exact) return found;
  return reader_.get_from(db.arch, key);
}

Status UserTier::put(const std::string& db, const Entry& entry,
                     std::span<const std::uint8_t> encoded) {
  Status s = appender_.append(db, entry.key, encoded);
  if (s.is_ok()) maintenance_.after_put();
  return s;
}

Status UserTier::ready_to_store() {
  if (Status made = trust_.ensure_dir(folder_.options.dir); !made.is_ok()) return made;
  if (Status writable = folder_.env.check_writable(folder_.options.dir); !writable.is_ok()) {
    return writable;
  }
  return Status::ok();
}

Status UserTier::remove(const std::string& db, const CacheKey& key) {
  if (const std::string* refused = trust_.refusal()) return Status::not_supported(*refused);
  auto open = dbs_.db_for(db);
  if (!open) return open.status();
  if (*open == nullptr) return Status::ok();
  if (!(*open)->find(key)) {
    WriterLock lock((*open)->mutex);
    (*open)->read_hint();
  }
  if (!(*open)->find(key)) return Status::ok();
  const auto removal = encode_removal(key);
  return appender_.append(db, key, removal, /*removal=*/true);
}

Result<std::unique_ptr<FileLock>> UserTier::try_lock(const std::string& db, const CacheKey& key) {
  // In a folder that cannot be created or written, no process can store
  // the kernel, so there is nothing to wait for: a lock that holds
  // nothing, and the write after the compile reports the folder, once.
  if (!trust_.ensure_dir(folder_.options.dir).is_ok()) return std::make_unique<FileLock>();
  std::uint64_t offset = 0;
  for (int i = 0; i < 8; ++i) offset = (offset << 8) | key.bytes()[i];
  auto lock = folder_.lock_byte(db, offset | 1);  // odd: byte 0 is the append lock
  if (!lock && !trust_.folder_writable()) return std::make_unique<FileLock>();
  return lock;
}

void UserTier::note_use(const DbNames& names, const CacheKey& key) {
  for (const std::string* name : {&names.exact, &names.arch}) {
    std::shared_ptr<Db> db = dbs_.find_open(*name);
    if (db == nullptr) continue;
    if (auto found = db->lookup(key)) {
      uses_.record_use(*name, *db, *found);
      db->learnt(*found);
      return;
    }
  }
}

Result<std::vector<std::string>> UserTier::databases() const { return dbs_.names(); }

Result<std::vector<EntryInfo>> UserTier::list(const std::string& db) const {
  std::vector<EntryInfo> out;
  auto* self = const_cast<UserTier*>(this);
  Status s = self->reader_.for_each_entry(db, [&](const Entry& entry, const HintRecord& record) {
    out.push_back(summarize_entry(db, entry, record.size));
  });
  if (!s.is_ok()) return s;
  // When each was last used, where the use table knows (listing is no use).
  auto open = self->dbs_.db_for(db);
  if (!open || *open == nullptr || !(*open)->writable) return out;
  const UseTable* table =
      self->uses_.use_table(db, **open, minute_of(folder_.env.now_unix()), /*force=*/true);
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
  Status s = const_cast<UserTier*>(this)->reader_.for_each_entry(
      db, [&](const Entry& entry, const HintRecord&) { out.push_back(entry); });
  if (!s.is_ok()) return s;
  return out;
}

Result<std::uint64_t> UserTier::clear() {
  auto names = databases();
  if (!names) return names.status();
  Env& env = folder_.env;
  std::uint64_t removed = 0;
  for (const auto& db : *names) {
    // Under the append lock, so that no write of this database is lost
    // halfway; a lock held too long (a stopped process) does not stop
    // the clear.
    auto lock = folder_.append_lock(db, kAppendWait);
    if (auto open = dbs_.db_for(db); open && *open) removed += (*open)->size();
    dbs_.forget(db);
    // remove_all: a folder where a file belongs goes too. Processes that
    // hold the old files notice on their next miss.
    if (Status s = env.remove_all(folder_.log_path(db)); !s.is_ok()) return s;
    if (Status s = env.remove_all(folder_.hint_path(db)); !s.is_ok()) return s;
    if (Status s = env.remove_all(folder_.use_path(db)); !s.is_ok()) return s;
  }
  return removed;
}

Status UserTier::verify(bool repair, VerifyReport& report) {
  return verifier_.verify(repair, report);
}

Result<PruneReport> UserTier::prune(const PruneOptions& options) {
  if (const std::string* refused = trust_.refusal()) return Status::unavailable(*refused);
  Limits limits = folder_.options.limits;
  if (options.max_size) limits.max_bytes = *options.max_size;
  if (options.max_entries) limits.max_entries = *options.max_entries;
  if (options.max_age) limits.max_age_seconds = options.max_age->count();
  PruneReport report;
  if (Status s = maintenance_.run_pass(limits, kPruneWait, report); !s.is_ok()) return s;
  return report;
}

Result<Tier::Usage> UserTier::usage() const {
  auto* self = const_cast<UserTier*>(this);  // opening a database is not a change
  auto names = databases();                  // unavailable when the folder is refused
  if (!names) return names.status();
  Usage usage;
  for (const std::string& name : *names) {
    std::shared_ptr<Db> db = self->dbs_.current_db(name);
    if (db == nullptr) continue;
    ++usage.databases;
    usage.entries += db->size();
    usage.bytes += folder_.file_sizes(name).total();
  }
  return usage;
}

}  // namespace
}  // namespace kcache::userlog

namespace kcache {

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events) {
  return std::make_unique<userlog::UserTier>(std::move(options), env, log, events);
}

}  // namespace kcache
