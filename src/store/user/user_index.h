// The index of one user-tier database (<db>.ukdb): a SQLite file in WAL mode
// (a rollback journal on network file systems) with one row per entry.
// Entry bytes live in their own files; hits never read the index
// (docs/design.md §3). sqlite3.h is included only in user_index.cpp.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kcache {

struct IndexRow {
  CacheKey key;
  std::string backend;
  std::string kernels;
  std::uint64_t payload_bytes = 0;
  std::uint64_t stored_bytes = 0;
  std::int64_t created_unix = 0;
  std::int64_t last_used_unix = 0;
};

// How the index commits. WAL needs memory shared by every process that opens
// the file, which a network file system does not give across machines;
// there the index keeps a rollback journal (<db>.ukdb-journal).
enum class IndexJournal { kWal, kRollback };

// Thread-safe (one connection behind a mutex). A damaged file gives
// kCorruption, from open or from any later call (SQLITE_CORRUPT,
// SQLITE_NOTADB); the user tier then moves it aside and rebuilds it.
class UserIndex {
 public:
  // Opens or creates the index. A file that is not a kcache index (garbage,
  // another SQLite database) gives kCorruption; a busy database is retried
  // for up to `busy_timeout_ms`.
  static Result<std::unique_ptr<UserIndex>> open(const std::string& path, int busy_timeout_ms,
                                                 IndexJournal journal = IndexJournal::kWal);
  ~UserIndex();
  UserIndex(const UserIndex&) = delete;
  UserIndex& operator=(const UserIndex&) = delete;

  // True when open() found no index and created it (empty).
  [[nodiscard]] bool created() const { return created_; }

  Status upsert(const IndexRow& row);
  // All of `rows` in one transaction.
  Status upsert_all(const std::vector<IndexRow>& rows);
  Status remove(const CacheKey& key);
  Result<std::vector<IndexRow>> rows();
  // SQLite's quick_check over every page: kCorruption with its first finding.
  Status check();

 private:
  explicit UserIndex(void* db) : db_(db) {}
  Status upsert_locked(const IndexRow& row);
  void* db_;  // sqlite3*
  bool created_ = false;
  std::mutex mutex_;
};

}  // namespace kcache
