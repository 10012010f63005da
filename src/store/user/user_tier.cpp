#include "store/user/user_tier.h"

#include <map>
#include <mutex>
#include <set>

#include "store/user/user_index.h"

namespace kcache {
namespace {

constexpr mode_t kFolderMode = 0700;
constexpr int kBusyTimeoutMs = 5000;
constexpr std::string_view kIndexSuffix = ".ukdb";
constexpr std::string_view kEntriesSuffix = ".entries";

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

  Result<std::unique_ptr<FileLock>> try_lock(const std::string& db, const CacheKey& key) override {
    if (Status s = ensure_dir(options_.dir); !s.is_ok()) return s;
    std::uint64_t offset = 0;
    for (int i = 0; i < 8; ++i) offset = (offset << 8) | key.bytes()[i];
    return env_.try_lock(options_.dir + "/" + db + ".locks", offset);
  }

  Result<std::vector<std::string>> databases() const override {
    auto entries = env_.list_dir(options_.dir);
    if (!entries) {
      if (entries.status().code() == StatusCode::kNotFound) return std::vector<std::string>();
      return entries.status();
    }
    std::set<std::string> names;
    for (const auto& e : *entries) {
      if (!e.is_dir && e.name.ends_with(kIndexSuffix) && e.name.size() > kIndexSuffix.size()) {
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
        created_dirs_.clear();
      }
      for (std::string_view suffix : {"", "-wal", "-shm"}) {
        if (Status s = env_.remove_file(index_path(db) + std::string(suffix)); !s.is_ok()) return s;
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
      Status index_status = with_index(db, [&](UserIndex& index) -> Status {
        auto rows = index.rows();
        if (!rows) return rows.status();
        for (const auto& row : *rows) indexed.insert(row.key);
        return Status::ok();
      });
      if (!index_status.is_ok()) {
        report.problems.push_back({index_path(db), index_status.message(), false});
      }
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
        if (index_status.is_ok() && !indexed.contains(key)) {
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
    }
    return Status::ok();
  }

 private:
  Result<std::optional<Entry>> get_from(const std::string& db, const CacheKey& key) {
    const std::string path = entry_path(db, key);
    auto bytes = env_.read_file(path);
    if (!bytes) {
      if (bytes.status().code() == StatusCode::kNotFound) return std::optional<Entry>();
      return bytes.status();
    }
    auto entry = decode_entry(*bytes, &key);
    if (!entry) {
      quarantine(db, path, &key, entry.status());
      return std::optional<Entry>();
    }
    return std::optional<Entry>(std::move(*entry));
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

  // (path, key) of every entry file of `db`; temporary files are skipped.
  std::vector<std::pair<std::string, CacheKey>> entry_files(const std::string& db) const {
    std::vector<std::pair<std::string, CacheKey>> files;
    auto shards = env_.list_dir(entries_dir(db));
    if (!shards) return files;
    for (const auto& shard : *shards) {
      if (!shard.is_dir) continue;
      auto names = env_.list_dir(entries_dir(db) + "/" + shard.name);
      if (!names) continue;
      for (const auto& file : *names) {
        if (auto key = CacheKey::from_hex(file.name); key && !file.is_dir) {
          files.emplace_back(entries_dir(db) + "/" + shard.name + "/" + file.name, *key);
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

  // Runs `action` on the index of `db`, opening (or recreating a corrupt)
  // index first.
  template <class Action>
  Status with_index(const std::string& db, Action&& action) {
    UserIndex* index = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = indexes_.find(db);
      if (it != indexes_.end()) index = it->second.get();
    }
    if (index == nullptr) {
      if (Status s = ensure_dir(options_.dir); !s.is_ok()) return s;
      auto opened = UserIndex::open(index_path(db), kBusyTimeoutMs);
      if (!opened && opened.status().code() == StatusCode::kCorruption) {
        quarantine(db, index_path(db), nullptr, opened.status());
        for (std::string_view suffix : {"-wal", "-shm"}) {
          env_.remove_file(index_path(db) + std::string(suffix));
        }
        opened = UserIndex::open(index_path(db), kBusyTimeoutMs);
      }
      if (!opened) return opened.status();
      std::lock_guard lock(mutex_);
      index = indexes_.emplace(db, std::move(*opened)).first->second.get();
    }
    return action(*index);
  }

  // Moves a bad file aside (never deletes it silently) and reports it.
  void quarantine(const std::string& db, const std::string& path, const CacheKey* key,
                  const Status& problem) {
    events_.on_corrupt(name(), path, problem);
    const std::string folder = options_.dir + "/quarantine";
    const std::string base = path.substr(path.find_last_of('/') + 1);
    const std::string target =
        folder + "/" + db + "." + base + "." + std::to_string(env_.now_unix()) + ".bad";
    Status moved = env_.create_dirs(folder, kFolderMode);
    if (moved.is_ok()) moved = env_.rename(path, target);
    if (!moved.is_ok()) {
      // Could not move it aside: remove it, so that it is not met again.
      env_.remove_file(path);
    }
    if (key != nullptr) {
      std::lock_guard lock(mutex_);
      if (auto it = indexes_.find(db); it != indexes_.end()) it->second->remove(*key);
    }
  }

  const UserTierOptions options_;
  Env& env_;
  const Logger& log_;
  TierEvents& events_;
  std::mutex mutex_;
  std::set<std::string> created_dirs_;
  std::map<std::string, std::unique_ptr<UserIndex>> indexes_;
};

}  // namespace

std::unique_ptr<Tier> make_user_tier(UserTierOptions options, Env& env, const Logger& log,
                                     TierEvents& events) {
  return std::make_unique<UserTier>(std::move(options), env, log, events);
}

}  // namespace kcache
