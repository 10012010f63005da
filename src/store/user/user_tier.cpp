#include "store/user/user_tier.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "format/hash.h"
#include "store/user/user_index.h"

namespace kcache {
namespace {

constexpr mode_t kFolderMode = 0700;
constexpr int kBusyTimeoutMs = 5000;
constexpr std::string_view kIndexSuffix = ".ukdb";
constexpr std::string_view kEntriesSuffix = ".entries";
constexpr std::string_view kQuarantineFolder = "quarantine";
// The files SQLite keeps beside an index.
constexpr std::string_view kIndexSideSuffixes[] = {"-wal", "-shm", "-journal"};
// A temporary entry file older than this was left by a killed writer.
constexpr std::int64_t kStaleTempSeconds = 3600;

class UserTier final : public Tier {
 public:
  UserTier(UserTierOptions options, Env& env, const Logger& log, TierEvents& events)
      : options_(std::move(options)), env_(env), log_(log), events_(events) {}

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
    const std::string path = entry_path(db, entry.key);
    if (Status s = ensure_dir(path.substr(0, path.find_last_of('/'))); !s.is_ok()) return s;
    if (Status s = env_.write_file_atomic(path, encoded, options_.sync); !s.is_ok()) return s;
    // The entry is committed; a missing row only hides it from `list` until
    // `verify --repair` restores it.
    IndexRow row = row_for(db, entry, encoded.size());
    if (Status s = with_index(db, [&](UserIndex& index) { return index.upsert(row); });
        !s.is_ok()) {
      log_.warn_once("UserDb:index:" + index_path(db), "UserDb",
                     "Cannot update the index " + index_path(db) + ": " + s.message() +
                         " (entries are still stored and served)");
    }
    return Status::ok();
  }

  Status remove(const std::string& db, const CacheKey& key) override {
    if (Status s = env_.remove_file(entry_path(db, key)); !s.is_ok()) return s;
    return with_index(db, [&](UserIndex& index) { return index.remove(key); });
  }

  Result<std::unique_ptr<FileLock>> try_lock(const std::string& db, const CacheKey& key) override {
    // In a folder that cannot be created or written, no process can store
    // the kernel, so there is nothing to wait for: a lock that holds
    // nothing, and the write after the compile reports the folder, once.
    if (!ensure_dir(options_.dir).is_ok()) return std::make_unique<FileLock>();
    std::uint64_t offset = 0;
    for (int i = 0; i < 8; ++i) offset = (offset << 8) | key.bytes()[i];
    const std::string path = options_.dir + "/" + db + ".locks";
    auto lock = env_.try_lock(path, offset);
    if (!lock && !folder_writable()) return std::make_unique<FileLock>();
    // Something other than a plain file where the lock file belongs (a
    // folder, say): move it aside like any bad file and try again, once.
    // The content of a lock file is never read, so garbage in it is harmless.
    if (auto info = env_.file_info(path); !lock && info && info->type != FileType::kRegular) {
      events_.on_corrupt(name(), path,
                         Status::corruption("not a lock file: " + lock.status().message()));
      move_to_quarantine(db, path);
      lock = env_.try_lock(path, offset);
    }
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
      // An index of any type: a folder there is met, reported and moved aside.
      if (e.name.ends_with(kIndexSuffix) && e.name.size() > kIndexSuffix.size()) {
        names.insert(e.name.substr(0, e.name.size() - kIndexSuffix.size()));
      }
      if (e.is_dir && e.name.ends_with(kEntriesSuffix) && e.name.size() > kEntriesSuffix.size()) {
        names.insert(e.name.substr(0, e.name.size() - kEntriesSuffix.size()));
      }
    }
    return std::vector<std::string>(names.begin(), names.end());
  }

  Result<std::vector<EntryInfo>> list(const std::string& db) const override {
    std::vector<EntryInfo> out;
    Status s = const_cast<UserTier*>(this)->with_index(db, [&](UserIndex& index) -> Status {
      out.clear();  // with_index may run this twice
      auto rows = index.rows();
      if (!rows) return rows.status();
      for (const auto& row : *rows) {
        out.push_back({db, row.key, row.backend, row.kernels, row.payload_bytes, row.stored_bytes,
                       row.created_unix});
      }
      return Status::ok();
    });
    if (!s.is_ok()) return s;
    return out;
  }

  Result<std::vector<Entry>> read_all(const std::string& db) const override {
    std::vector<Entry> out;
    for (const auto& [path, key] : entry_files(db)) {
      auto bytes = env_.read_file(path);
      if (!bytes) continue;  // removed meanwhile
      auto entry = decode_entry(*bytes, &key);
      if (!entry) {
        const_cast<UserTier*>(this)->quarantine(db, path, &key, entry.status());
        continue;
      }
      out.push_back(std::move(*entry));
    }
    return out;
  }

  Result<std::uint64_t> clear() override {
    auto names = databases();
    if (!names) return names.status();
    std::uint64_t removed = 0;
    for (const auto& db : *names) {
      removed += entry_files(db).size();
      {
        std::lock_guard lock(mutex_);
        indexes_.erase(db);
        folders_.erase(db);
        created_dirs_.clear();
      }
      // remove_all: a folder where the index belongs goes too.
      if (Status s = env_.remove_all(index_path(db)); !s.is_ok()) return s;
      for (std::string_view suffix : kIndexSideSuffixes) {
        if (Status s = env_.remove_all(index_path(db) + std::string(suffix)); !s.is_ok()) return s;
      }
      if (Status s = env_.remove_all(entries_dir(db)); !s.is_ok()) return s;
    }
    return removed;
  }

  Status verify(bool repair, VerifyReport& report) override {
    auto names = databases();
    if (!names) return names.status();
    for (const auto& db : *names) {
      ++report.databases_checked;
      std::set<CacheKey> indexed;
      const bool index_ok = verify_index(db, repair, report, indexed);
      std::set<CacheKey> present;  // keys with an entry file, good or bad
      for (const auto& [path, key] : entry_files(db)) {
        ++report.entries_checked;
        present.insert(key);
        auto bytes = env_.read_file(path);
        Result<Entry> entry = bytes ? decode_entry(*bytes, &key) : Result<Entry>(bytes.status());
        if (!entry) {
          if (repair) quarantine(db, path, &key, entry.status());
          report.problems.push_back({path, entry.status().message(), repair});
          continue;
        }
        ++report.entries_ok;
        if (index_ok && !indexed.contains(key)) {
          bool fixed = repair && with_index(db, [&](UserIndex& index) {
                                   return index.upsert(row_for(db, *entry, bytes->size));
                                 }).is_ok();
          report.problems.push_back({path, "entry is not in the index", fixed});
        }
      }
      for (const auto& key : indexed) {
        if (present.contains(key)) continue;
        bool fixed =
            repair && with_index(db, [&](UserIndex& index) { return index.remove(key); }).is_ok();
        report.problems.push_back(
            {index_path(db), "index row " + key.hex() + " has no entry file", fixed});
      }
      for (const auto& path : stale_temp_files(db)) {
        bool fixed = repair && env_.remove_file(path).is_ok();
        report.problems.push_back({path, "temporary file left by an interrupted write", fixed});
      }
    }
    return Status::ok();
  }

 private:
  Result<std::optional<Entry>> get_from(const std::string& db, const CacheKey& key) {
    char relative[2 + 1 + 2 * CacheKey::kSize];  // "<shard>/<hex>", no allocation
    write_hex(key.bytes(), relative + 3);
    relative[0] = relative[3];
    relative[1] = relative[4];
    relative[2] = '/';
    auto bytes = read_entry(db, std::string_view(relative, sizeof relative));
    if (!bytes) {
      if (bytes.status().code() == StatusCode::kNotFound) return std::optional<Entry>();
      const std::string path = entry_path(db, key);
      // Something other than a file where the entry belongs (a folder) is
      // as bad as a damaged entry.
      if (auto info = env_.file_info(path); info && info->type != FileType::kRegular) {
        quarantine(db, path, &key, Status::corruption(path + " is not a regular file"));
        return std::optional<Entry>();
      }
      // A folder this process may not write (or enter) is one problem, which
      // the write after the compile reports; the read is a miss.
      if (!folder_writable()) return std::optional<Entry>();
      return bytes.status();
    }
    auto entry = decode_entry(*bytes, &key);
    if (!entry) {
      quarantine(db, entry_path(db, key), &key, entry.status());
      return std::optional<Entry>();
    }
    return std::optional<Entry>(std::move(*entry));
  }

  // Reads "<entries folder of db>/<relative>" through the folder held open
  // (no walk of the whole path on a hit). A folder removed or replaced
  // since (`kcache clear` elsewhere) reads as empty, or fails with ESTALE
  // on NFS: whatever fails through the held folder is tried again by the
  // whole path, and when that finds the file the folder is opened again on
  // its next use.
  Result<ByteBuffer> read_entry(const std::string& db, std::string_view relative) {
    std::shared_ptr<const Directory> folder = entries_folder(db);
    if (folder) {
      auto bytes = folder->read_file(relative);
      if (bytes) return bytes;
    }
    std::string path = entries_dir(db);
    path.append("/").append(relative);
    auto bytes = env_.read_file(path);
    if (folder && bytes) {
      std::lock_guard lock(mutex_);
      if (auto it = folders_.find(db); it != folders_.end() && it->second == folder) {
        folders_.erase(it);
      }
    }
    return bytes;
  }

  // The entries folder of `db`, held open; nullptr while it cannot be opened
  // (not created yet), which is tried again on the next read.
  std::shared_ptr<const Directory> entries_folder(const std::string& db) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = folders_.find(db); it != folders_.end()) return it->second;
    }
    auto opened = env_.open_directory(entries_dir(db));
    if (!opened) return nullptr;
    std::shared_ptr<const Directory> folder = std::move(*opened);
    std::lock_guard lock(mutex_);
    return folders_.try_emplace(db, std::move(folder)).first->second;
  }

  // Whether this process may write in the tier's folder (asked once).
  bool folder_writable() {
    std::lock_guard lock(mutex_);
    if (!folder_writable_) folder_writable_ = env_.check_writable(options_.dir).is_ok();
    return *folder_writable_;
  }

  std::string index_path(const std::string& db) const {
    return options_.dir + "/" + db + std::string(kIndexSuffix);
  }
  std::string entries_dir(const std::string& db) const {
    return options_.dir + "/" + db + std::string(kEntriesSuffix);
  }
  std::string entry_path(const std::string& db, const CacheKey& key) const {
    std::string hex = key.hex();
    return entries_dir(db) + "/" + hex.substr(0, 2) + "/" + hex;
  }

  // (path, key) of every entry file of `db` (or whatever else bears a key's
  // name there); temporary files are skipped.
  std::vector<std::pair<std::string, CacheKey>> entry_files(const std::string& db) const {
    std::vector<std::pair<std::string, CacheKey>> files;
    auto shards = env_.list_dir(entries_dir(db));
    if (!shards) return files;
    for (const auto& shard : *shards) {
      if (!shard.is_dir) continue;
      auto names = env_.list_dir(entries_dir(db) + "/" + shard.name);
      if (!names) continue;
      for (const auto& file : *names) {
        if (auto key = CacheKey::from_hex(file.name)) {
          files.emplace_back(entries_dir(db) + "/" + shard.name + "/" + file.name, *key);
        }
      }
    }
    return files;
  }

  // Temporary entry files (`<key>.tmp.<pid>...`) older than an hour: a
  // writer that was killed before its rename left them.
  std::vector<std::string> stale_temp_files(const std::string& db) const {
    std::vector<std::string> files;
    auto shards = env_.list_dir(entries_dir(db));
    if (!shards) return files;
    const std::int64_t now = env_.now_unix();
    for (const auto& shard : *shards) {
      if (!shard.is_dir) continue;
      const std::string folder = entries_dir(db) + "/" + shard.name;
      auto names = env_.list_dir(folder);
      if (!names) continue;
      for (const auto& file : *names) {
        if (file.is_dir || file.name.find(".tmp.") == std::string::npos) continue;
        auto info = env_.file_info(folder + "/" + file.name);
        if (info && info->type == FileType::kRegular &&
            now - info->modified_unix > kStaleTempSeconds) {
          files.push_back(folder + "/" + file.name);
        }
      }
    }
    return files;
  }

  static IndexRow row_for(const std::string& db, const Entry& entry, std::uint64_t stored) {
    EntryInfo info = summarize_entry(db, entry, stored);
    return {entry.key,         info.backend,       info.kernels,      info.bytes,
            info.stored_bytes, entry.created_unix, entry.created_unix};
  }

  Status ensure_dir(const std::string& dir) {
    {
      std::lock_guard lock(mutex_);
      if (created_dirs_.contains(dir)) return Status::ok();
    }
    if (Status s = env_.create_dirs(dir, kFolderMode); !s.is_ok()) return s;
    std::lock_guard lock(mutex_);
    created_dirs_.insert(dir);
    return Status::ok();
  }

  // Runs `action` on the index of `db`. An index found damaged, on opening
  // or by `action` (a zeroed page, a foreign WAL, a folder where the WAL
  // belongs), is moved to quarantine/ and rebuilt from the entry files, and
  // `action` runs once more: the index never fails a lookup or a compile.
  template <class Action>
  Status with_index(const std::string& db, Action&& action) {
    Status s;
    {
      auto index = open_index(db, /*repair=*/true);
      if (!index) return index.status();
      s = action(**index);
    }
    if (s.is_ok()) return s;
    const bool corrupt = s.code() == StatusCode::kCorruption;
    if (!corrupt && misplaced_index_files(db).empty()) return s;
    // Closed before the files move: SQLite shares one file's state among the
    // connections of a process, so a connection left open would hand the
    // damage on to the new one.
    forget_index(db);
    if (corrupt) {
      quarantine_index(db, s);
    } else {
      quarantine_misplaced_index_files(db);
    }
    auto index = open_index(db, /*repair=*/true);
    if (!index) return index.status();
    return action(**index);
  }

  // The index of `db`, opened once per tier. With `repair`, an index that
  // SQLite calls corrupt, or an index, WAL or journal that is not a regular
  // file, is moved to quarantine/ and created afresh; what was done is
  // appended to `repairs`. A new index is filled from the entry files.
  Result<std::shared_ptr<UserIndex>> open_index(const std::string& db, bool repair,
                                                std::vector<std::string>* repairs = nullptr) {
    if (auto open = cached_index(db)) return open;
    std::lock_guard opening(open_mutex_);  // one opener (and re-indexer) at a time
    if (auto open = cached_index(db)) return open;
    if (Status s = ensure_dir(options_.dir); !s.is_ok()) return s;
    const std::string path = index_path(db);
    const IndexJournal journal = journal_mode();
    auto opened = UserIndex::open(path, kBusyTimeoutMs, journal);
    if (!opened && repair) {
      if (opened.status().code() == StatusCode::kCorruption) {
        // Another process may have rebuilt it a moment ago.
        opened = UserIndex::open(path, kBusyTimeoutMs, journal);
        if (!opened && opened.status().code() == StatusCode::kCorruption) {
          quarantine_index(db, opened.status());
          if (repairs) repairs->push_back(rebuilt_text(opened.status()));
          opened = UserIndex::open(path, kBusyTimeoutMs, journal);
        }
      } else if (auto moved = quarantine_misplaced_index_files(db); !moved.empty()) {
        if (repairs) repairs->insert(repairs->end(), moved.begin(), moved.end());
        opened = UserIndex::open(path, kBusyTimeoutMs, journal);
      }
    }
    if (!opened) return opened.status();
    std::shared_ptr<UserIndex> index = std::move(*opened);
    if (index->created()) reindex(db, *index);
    std::lock_guard lock(mutex_);
    return indexes_.emplace(db, std::move(index)).first->second;
  }

  std::shared_ptr<UserIndex> cached_index(const std::string& db) {
    std::lock_guard lock(mutex_);
    auto it = indexes_.find(db);
    return it == indexes_.end() ? nullptr : it->second;
  }

  // Closes this tier's connection to the index of `db` (once its last user
  // is done).
  void forget_index(const std::string& db) {
    std::lock_guard lock(mutex_);
    indexes_.erase(db);
  }

  // WAL, unless the folder is on a network file system (or FUSE, which may
  // be one): WAL's shared memory does not reach across machines, and
  // SQLite's documentation warns it breaks there. Decided once.
  IndexJournal journal_mode() {
    if (journal_) return *journal_;
    const FileSystemInfo fs = env_.file_system(options_.dir);
    journal_ = fs.kind == FileSystemKind::kLocal ? IndexJournal::kWal : IndexJournal::kRollback;
    if (fs.kind == FileSystemKind::kNetwork) {
      log_.warn_once("UserDb:network:" + options_.dir, "UserDb",
                     "The user cache " + options_.dir + " is on a network file system (" + fs.name +
                         "): its index keeps a rollback journal instead of WAL, whose shared "
                         "memory does not work across machines; entries are still stored and "
                         "served. For speed, put the cache on a local disk "
                         "(KCACHE_CUSTOM_CACHE_DIR)");
    } else if (fs.kind == FileSystemKind::kFuse) {
      log_.debug("UserDb", "the user cache " + options_.dir +
                               " is on FUSE (perhaps sshfs); its index keeps a rollback journal");
    }
    return *journal_;
  }

  static std::string rebuilt_text(const Status& problem) {
    return problem.message() + "; moved to " + std::string(kQuarantineFolder) +
           "/ and rebuilt from the entry files";
  }

  // Moves the index of `db` and its WAL, shared-memory and journal files to
  // quarantine/ (a WAL without its database, or the other way round, is
  // worthless) and reports it once.
  void quarantine_index(const std::string& db, const Status& problem) {
    const std::string path = index_path(db);
    events_.on_corrupt(name(), path, Status(problem.code(), rebuilt_text(problem)));
    move_to_quarantine(db, path);
    for (std::string_view suffix : kIndexSideSuffixes) {
      const std::string side = path + std::string(suffix);
      if (env_.file_info(side).is_ok()) move_to_quarantine(db, side);
    }
  }

  // The index and side files of `db` that exist but are not regular files
  // (a folder, a fifo, a symbolic link): SQLite cannot open the index then.
  std::vector<std::string> misplaced_index_files(const std::string& db) const {
    std::vector<std::string> found;
    const std::string path = index_path(db);
    std::vector<std::string> candidates{path};
    for (std::string_view suffix : kIndexSideSuffixes)
      candidates.push_back(path + std::string(suffix));
    for (const auto& candidate : candidates) {
      auto info = env_.file_info(candidate);
      if (info && info->type != FileType::kRegular) found.push_back(candidate);
    }
    return found;
  }

  // Moves those aside; returns one line per file moved.
  std::vector<std::string> quarantine_misplaced_index_files(const std::string& db) {
    std::vector<std::string> moved;
    for (const auto& path : misplaced_index_files(db)) {
      Status problem =
          Status::corruption(path + " is not a regular file; moved to " +
                             std::string(kQuarantineFolder) + "/ and the index rebuilt");
      events_.on_corrupt(name(), path, problem);
      if (move_to_quarantine(db, path)) moved.push_back(problem.message());
    }
    return moved;
  }

  // Fills a new index from the entry files, which are the truth: after the
  // index was lost or quarantined, nothing but this time is lost. Bad
  // entries met on the way are quarantined.
  void reindex(const std::string& db, UserIndex& index) {
    std::vector<IndexRow> rows;
    for (const auto& [path, key] : entry_files(db)) {
      auto bytes = env_.read_file(path);
      if (!bytes) continue;  // removed meanwhile, or unreadable: not indexed
      auto entry = decode_entry(*bytes, &key);
      if (!entry) {
        quarantine(db, path, &key, entry.status());
        continue;
      }
      rows.push_back(row_for(db, *entry, bytes->size));
    }
    if (rows.empty()) return;
    if (Status s = index.upsert_all(rows); !s.is_ok()) {
      log_.debug("UserDb", "re-indexing " + index_path(db) + ": " + s.message());
    }
  }

  // Checks the index of `db` for verify and collects its keys; false when
  // its rows cannot be trusted.
  bool verify_index(const std::string& db, bool repair, VerifyReport& report,
                    std::set<CacheKey>& indexed) {
    const std::string path = index_path(db);
    if (!repair) {
      for (const auto& misplaced : misplaced_index_files(db)) {
        report.problems.push_back({misplaced, "not a regular file", false});
      }
    }
    std::vector<std::string> repairs;
    Status checked;
    {
      auto index = open_index(db, repair, &repairs);
      for (const auto& done : repairs) report.problems.push_back({path, done, true});
      if (!index) {
        report.problems.push_back({path, index.status().message(), false});
        return false;
      }
      checked = (*index)->check();
      if (checked.is_ok()) checked = collect_keys(**index, indexed);
    }
    if (checked.is_ok()) return true;
    if (!repair || checked.code() != StatusCode::kCorruption) {
      report.problems.push_back({path, checked.message(), false});
      return false;
    }
    forget_index(db);  // closed before the files move (see with_index)
    quarantine_index(db, checked);
    auto index = open_index(db, /*repair=*/true);
    const bool rebuilt = index.is_ok() && collect_keys(**index, indexed).is_ok();
    report.problems.push_back({path, rebuilt_text(checked), rebuilt});
    return rebuilt;
  }

  static Status collect_keys(UserIndex& index, std::set<CacheKey>& keys) {
    auto rows = index.rows();
    if (!rows) return rows.status();
    keys.clear();
    for (const auto& row : *rows) keys.insert(row.key);
    return Status::ok();
  }

  // Moves `path` to quarantine/<db>.<name>.<unix time>.bad (never deletes
  // it silently); true when moved. A file that cannot be moved is removed,
  // so that it is not met again.
  bool move_to_quarantine(const std::string& db, const std::string& path) {
    const std::string folder = options_.dir + "/" + std::string(kQuarantineFolder);
    const std::string base = path.substr(path.find_last_of('/') + 1);
    const std::string stem = folder + "/" + db + "." + base + "." + std::to_string(env_.now_unix());
    std::string target = stem + ".bad";
    for (int n = 1; env_.file_info(target).is_ok() && n < 1000; ++n) {
      target = stem + "." + std::to_string(n) + ".bad";
    }
    Status moved = env_.create_dirs(folder, kFolderMode);
    if (moved.is_ok()) moved = env_.rename(path, target);
    if (moved.is_ok()) return true;
    if (env_.remove_file(path).is_ok()) return false;
    (void)env_.remove_all(path);  // a folder where a file belongs
    return false;
  }

  // Moves a bad entry aside and reports it; its index row goes too.
  void quarantine(const std::string& db, const std::string& path, const CacheKey* key,
                  const Status& problem) {
    events_.on_corrupt(name(), path, problem);
    move_to_quarantine(db, path);
    if (key != nullptr) {
      if (auto index = cached_index(db)) index->remove(*key);
    }
  }

  const UserTierOptions options_;
  Env& env_;
  const Logger& log_;
  TierEvents& events_;
  std::mutex mutex_;  // guards the members below
  std::set<std::string> created_dirs_;
  std::map<std::string, std::shared_ptr<UserIndex>> indexes_;
  std::map<std::string, std::shared_ptr<const Directory>, std::less<>> folders_;
  std::optional<bool> folder_writable_;
  std::mutex open_mutex_;  // held while an index is opened; guards journal_
  std::optional<IndexJournal> journal_;
};

}  // namespace

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events) {
  return std::make_unique<UserTier>(std::move(options), env, log, events);
}

}  // namespace kcache
