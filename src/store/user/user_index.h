// The index of one user-tier database (<db>.ukdb): a SQLite file in WAL mode
// with one row per entry. Entry bytes live in their own files; hits never
// read the index (docs/design.md §3). sqlite3.h is included only in
// user_index.cpp.
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

// Thread-safe (one connection behind a mutex).
class UserIndex {
 public:
  // Opens or creates the index. A file that is not a kcache index (garbage,
  // another SQLite database) gives kCorruption; a busy database is retried
  // for up to `busy_timeout_ms`.
  static Result<std::unique_ptr<UserIndex>> open(const std::string& path, int busy_timeout_ms);
  ~UserIndex();
  UserIndex(const UserIndex&) = delete;
  UserIndex& operator=(const UserIndex&) = delete;

  Status upsert(const IndexRow& row);
  Status remove(const CacheKey& key);
  Result<std::vector<IndexRow>> rows();

 private:
  explicit UserIndex(void* db) : db_(db) {}
  void* db_;  // sqlite3*
  std::mutex mutex_;
};

}  // namespace kcache
