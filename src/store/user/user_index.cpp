#include "store/user/user_index.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>

namespace kcache {
namespace {

// 'KCIX': marks the file as a kcache index (PRAGMA application_id).
constexpr int kApplicationId = 0x4B434958;
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS entries(
  key BLOB PRIMARY KEY NOT NULL,
  backend TEXT NOT NULL,
  kernels TEXT NOT NULL,
  payload_bytes INTEGER NOT NULL,
  stored_bytes INTEGER NOT NULL,
  created INTEGER NOT NULL,
  last_used INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

constexpr const char* kSelectRows =
    "SELECT key, backend, kernels, payload_bytes, stored_bytes, created, last_used "
    "FROM entries ORDER BY created, key";

sqlite3* handle(void* db) { return static_cast<sqlite3*>(db); }

Status sqlite_status(sqlite3* db, const std::string& what, int rc) {
  std::string message = what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  int primary = rc & 0xFF;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Status::corruption(message);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::timeout(message);
  return Status::io_error(message);
}

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : rc_(sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr)) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  [[nodiscard]] int prepare_rc() const { return rc_; }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

Status exec(sqlite3* db, const char* sql, const std::string& what) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) return sqlite_status(db, what, rc);
  return Status::ok();
}

// An index of ours must hold the table that rows() reads. A damaged schema
// (SQLite's "no such column", a plain SQLITE_ERROR) is corruption, so that
// the user tier rebuilds the index instead of failing on it forever.
Status check_schema(sqlite3* db, const std::string& path) {
  Statement probe(db, kSelectRows);
  const int rc = probe.prepare_rc();
  if (rc == SQLITE_OK) return Status::ok();
  Status s = sqlite_status(db, path + " lacks kcache's entries table", rc);
  return (rc & 0xFF) == SQLITE_ERROR ? Status::corruption(s.message()) : s;
}

Result<int> pragma_int(sqlite3* db, const char* sql) {
  Statement stmt(db, sql);
  if (stmt.prepare_rc() != SQLITE_OK) return sqlite_status(db, sql, stmt.prepare_rc());
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return sqlite_status(db, sql, rc);
  return sqlite3_column_int(stmt.get(), 0);
}

void set_persist_wal(sqlite3* db, bool persist) {
  int value = persist ? 1 : 0;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &value);
}

}  // namespace

Result<std::unique_ptr<UserIndex>> UserIndex::open(const std::string& path, int busy_timeout_ms,
                                                   IndexJournal journal) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = sqlite_status(db, "cannot open index " + path, rc);
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<UserIndex> index(new UserIndex(db));
  sqlite3_busy_timeout(db, busy_timeout_ms);
  // Until the file has passed the checks below, closing must not delete a
  // WAL or shared-memory file SQLite finds beside it: if it is damaged, the
  // user tier moves it to quarantine/ with the index.
  set_persist_wal(db, true);

  auto app_id = pragma_int(db, "PRAGMA application_id");
  if (!app_id)
    return Status(app_id.status().code(), "index " + path + ": " + app_id.status().message());
  auto version = pragma_int(db, "PRAGMA user_version");
  if (!version) return version.status();
  if (*app_id == 0) {
    // New file, or one of ours that was never initialized: claim it only if empty.
    auto tables = pragma_int(db, "SELECT count(*) FROM sqlite_master");
    if (!tables) return tables.status();
    if (*tables != 0)
      return Status::corruption(path + " is a SQLite database but not a kcache index");
  } else if (*app_id != kApplicationId) {
    return Status::corruption(path + " is a SQLite database but not a kcache index");
  } else if (*version > kSchemaVersion) {
    return Status::not_supported(path + " was written by a newer kcache (index schema " +
                                 std::to_string(*version) + ")");
  } else if (Status s = check_schema(db, path); !s.is_ok()) {
    return s;
  }

  if (journal == IndexJournal::kWal) {
    if (Status s = exec(db, "PRAGMA journal_mode=WAL", "cannot use WAL for " + path); !s.is_ok()) {
      return s;
    }
    // NORMAL in WAL: a power cut may lose the last index rows, never corrupt
    // the index; entry files are synced before their rows exist.
    if (Status s = exec(db, "PRAGMA synchronous=NORMAL", path); !s.is_ok()) return s;
  } else {
    // Leaves WAL (when an earlier run used it) for a rollback journal, which
    // needs no shared memory; FULL, since NORMAL is not crash-proof there.
    if (Status s = exec(db, "PRAGMA journal_mode=DELETE", "cannot leave WAL for " + path);
        !s.is_ok()) {
      return s;
    }
    if (Status s = exec(db, "PRAGMA synchronous=FULL", path); !s.is_ok()) return s;
  }
  if (*app_id == 0) {
    std::string init = std::string("BEGIN IMMEDIATE;") + kSchema +
                       "PRAGMA application_id=" + std::to_string(kApplicationId) +
                       ";PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";COMMIT;";
    if (Status s = exec(db, init.c_str(), "cannot create index " + path); !s.is_ok()) {
      exec(db, "ROLLBACK", path);
      return s;
    }
    index->created_ = true;
  }
  set_persist_wal(db, false);
  return index;
}

UserIndex::~UserIndex() { sqlite3_close_v2(handle(db_)); }

Status UserIndex::upsert(const IndexRow& row) {
  std::lock_guard lock(mutex_);
  return upsert_locked(row);
}

Status UserIndex::upsert_all(const std::vector<IndexRow>& rows) {
  std::lock_guard lock(mutex_);
  sqlite3* db = handle(db_);
  if (Status s = exec(db, "BEGIN IMMEDIATE", "index insert"); !s.is_ok()) return s;
  for (const auto& row : rows) {
    if (Status s = upsert_locked(row); !s.is_ok()) {
      exec(db, "ROLLBACK", "index insert");
      return s;
    }
  }
  return exec(db, "COMMIT", "index insert");
}

Status UserIndex::check() {
  std::lock_guard lock(mutex_);
  sqlite3* db = handle(db_);
  Statement stmt(db, "PRAGMA quick_check(1)");
  if (stmt.prepare_rc() != SQLITE_OK) return sqlite_status(db, "index check", stmt.prepare_rc());
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return sqlite_status(db, "index check", rc);
  const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
  std::string result = text ? reinterpret_cast<const char*>(text) : "";
  if (result == "ok") return Status::ok();
  std::replace(result.begin(), result.end(), '\n', ' ');
  if (result.size() > 200) result = result.substr(0, 200) + "...";
  return Status::corruption("index check: " + result);
}

Status UserIndex::upsert_locked(const IndexRow& row) {
  sqlite3* db = handle(db_);
  Statement stmt(db,
                 "INSERT OR REPLACE INTO entries(key, backend, kernels, payload_bytes, "
                 "stored_bytes, created, last_used) VALUES(?,?,?,?,?,?,?)");
  if (stmt.prepare_rc() != SQLITE_OK) return sqlite_status(db, "index insert", stmt.prepare_rc());
  sqlite3_bind_blob(stmt.get(), 1, row.key.bytes().data(), CacheKey::kSize, SQLITE_STATIC);
  sqlite3_bind_text(stmt.get(), 2, row.backend.c_str(), -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt.get(), 3, row.kernels.c_str(), -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt.get(), 4, static_cast<sqlite3_int64>(row.payload_bytes));
  sqlite3_bind_int64(stmt.get(), 5, static_cast<sqlite3_int64>(row.stored_bytes));
  sqlite3_bind_int64(stmt.get(), 6, row.created_unix);
  sqlite3_bind_int64(stmt.get(), 7, row.last_used_unix);
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_DONE) return sqlite_status(db, "index insert", rc);
  return Status::ok();
}

Status UserIndex::remove(const CacheKey& key) {
  std::lock_guard lock(mutex_);
  sqlite3* db = handle(db_);
  Statement stmt(db, "DELETE FROM entries WHERE key = ?");
  if (stmt.prepare_rc() != SQLITE_OK) return sqlite_status(db, "index delete", stmt.prepare_rc());
  sqlite3_bind_blob(stmt.get(), 1, key.bytes().data(), CacheKey::kSize, SQLITE_STATIC);
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_DONE) return sqlite_status(db, "index delete", rc);
  return Status::ok();
}

Result<std::vector<IndexRow>> UserIndex::rows() {
  std::lock_guard lock(mutex_);
  sqlite3* db = handle(db_);
  Statement stmt(db, kSelectRows);
  if (stmt.prepare_rc() != SQLITE_OK) return sqlite_status(db, "index read", stmt.prepare_rc());
  std::vector<IndexRow> rows;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    if (sqlite3_column_bytes(stmt.get(), 0) != static_cast<int>(CacheKey::kSize)) continue;
    IndexRow row;
    CacheKey::Bytes key;
    std::memcpy(key.data(), sqlite3_column_blob(stmt.get(), 0), key.size());
    row.key = CacheKey(key);
    auto text = [&](int column) {
      const unsigned char* value = sqlite3_column_text(stmt.get(), column);
      return value ? std::string(reinterpret_cast<const char*>(value)) : std::string();
    };
    row.backend = text(1);
    row.kernels = text(2);
    row.payload_bytes = static_cast<std::uint64_t>(sqlite3_column_int64(stmt.get(), 3));
    row.stored_bytes = static_cast<std::uint64_t>(sqlite3_column_int64(stmt.get(), 4));
    row.created_unix = sqlite3_column_int64(stmt.get(), 5);
    row.last_used_unix = sqlite3_column_int64(stmt.get(), 6);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return sqlite_status(db, "index read", rc);
  return rows;
}

}  // namespace kcache
