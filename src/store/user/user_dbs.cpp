#include "store/user/user_dbs.h"

#include <utility>

namespace kcache::userlog {

Result<std::vector<std::string>> UserDbs::names() const {
  if (const std::string* refused = trust_.refusal()) return Status::unavailable(*refused);
  return folder_.list_databases();
}

Result<std::shared_ptr<Db>> UserDbs::db_for(const std::string& name) {
  if (std::shared_ptr<Db> open = find_open(name)) return open;
  auto opened = open_db(name);
  if (!opened || *opened == nullptr) return opened;
  MutexLock lock(mutex_);
  return dbs_.try_emplace(name, std::move(*opened)).first->second;
}

std::shared_ptr<Db> UserDbs::find_open(const std::string& name) {
  MutexLock lock(mutex_);
  if (auto it = dbs_.find(name); it != dbs_.end()) return it->second;
  return nullptr;
}

void UserDbs::keep(const std::string& name, std::shared_ptr<Db> db) {
  MutexLock lock(mutex_);
  dbs_[name] = std::move(db);
}

void UserDbs::forget(const std::string& name) {
  MutexLock lock(mutex_);
  dbs_.erase(name);
}

std::shared_ptr<Db> UserDbs::current_db(const std::string& name) {
  auto db = db_for(name);
  if (db && *db && replaced(name, **db)) {
    forget(name);
    db = db_for(name);
  }
  if (!db || *db == nullptr) return nullptr;
  WriterLock lock((*db)->mutex);
  (*db)->read_hint();
  (*db)->read_past_hint();
  return *db;
}

Result<std::shared_ptr<Db>> UserDbs::open_db(const std::string& name) {
  trust_.warn_if_network();
  Env& env = folder_.env;
  const std::string path = folder_.log_path(name);
  auto db = std::make_shared<Db>();
  auto log = env.open_file(path, OpenMode::kReadWrite);
  db->writable = log.is_ok();
  if (!log) {
    if (log.status().code() == StatusCode::kNotFound) return std::shared_ptr<Db>();
    log = env.open_random_access(path);  // a read-only file or folder
    if (!log) {
      if (log.status().code() == StatusCode::kNotFound) return std::shared_ptr<Db>();
      return log.status();
    }
  }
  if (Status own = folder_.opened_own_file(path, **log); !own.is_ok()) return own;
  // The folder exists now.
  if (const std::string* refused = trust_.check_trust_unless_trusted()) {
    return Status::not_supported(*refused);
  }
  db->log = std::move(*log);
  std::uint8_t header[kHeaderSize];
  auto size = db->log->size();
  if (!size) return size.status();
  if (*size < kHeaderSize) {
    return Status::corruption("shorter than a log header (" + std::to_string(*size) + " bytes)");
  }
  if (Status s = db->log->read_at(0, header); !s.is_ok()) return s;
  auto generation = decode_header(FileKind::kLog, header);
  if (!generation) return generation.status();
  db->generation = *generation;

  const std::string hint_path = folder_.hint_path(name);
  auto hint = db->writable ? env.open_file(hint_path, OpenMode::kReadWrite)
                           : env.open_random_access(hint_path);
  if (hint && folder_.opened_own_file(hint_path, **hint).is_ok() &&
      hint_describes(**hint, db->generation)) {
    db->hint = std::move(*hint);
    WriterLock lock(db->mutex);
    db->read_hint();
    return db;
  }
  // No usable hint: the log says it all, at the cost of reading it.
  auto scan = scan_log(*db->log);
  if (!scan) return scan.status();
  {
    WriterLock lock(db->mutex);
    db->index_scan(scan->live, scan->end);
  }
  rewrite_hint_after_scan(name, *db, scan->size);
  return db;
}

bool UserDbs::replaced(const std::string& name, const Db& db) const {
  auto log = folder_.env.file_info(folder_.log_path(name));
  if (!log || log->id != db.log->id()) return true;
  auto hint = folder_.env.file_info(folder_.hint_path(name));
  ReaderLock lock(db.mutex);  // write_hint may swap db.hint
  if (!db.hint) return hint.is_ok();
  return !hint || hint->id != db.hint->id();
}

Status UserDbs::write_hint(const std::string& name, Db& db) {
  std::vector<std::uint8_t> bytes;
  const auto header = encode_header(FileKind::kHint, db.generation);
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (const HintRecord& record : db.records()) {
    const auto encoded = encode_hint(record);
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
  }
  Env& env = folder_.env;
  const std::string path = folder_.hint_path(name);
  if (auto info = env.file_info(path); info && info->type != FileType::kRegular) {
    quarantine_file(name, path, Status::corruption(path + " is not a regular file"));
  }
  if (Status s = env.write_file_atomic(path, bytes, /*sync=*/false, folder_.file_mode());
      !s.is_ok())
    return s;
  auto hint = env.open_file(path, OpenMode::kReadWrite);
  if (!hint) return hint.status();
  if (Status own = folder_.opened_own_file(path, **hint); !own.is_ok()) return own;
  WriterLock lock(db.mutex);
  db.hint = std::move(*hint);
  db.hint_read = bytes.size();
  db.hinted_end = db.read_end;
  return Status::ok();
}

void UserDbs::rewrite_hint_after_scan(const std::string& name, Db& db, std::uint64_t scanned) {
  if (!db.writable) return;
  // Only if no one appended since the scan (what the scan missed, a
  // removal say, would be dropped from the hint).
  if (auto lock = folder_.lock_byte(name, kAppendLockOffset); lock && *lock) {
    auto now = folder_.env.file_info(folder_.log_path(name));
    auto size_now = db.log->size();
    if (now && now->id == db.log->id() && size_now && *size_now == scanned) {
      (void)write_hint(name, db);
    }
  }
}

Result<std::optional<Entry>> UserDbs::open_failure(const std::string& name, const Status& problem) {
  const std::string path = folder_.log_path(name);
  auto info = folder_.env.file_info(path);
  const bool bad =
      (info && info->type != FileType::kRegular) || problem.code() == StatusCode::kCorruption;
  if (!bad) {
    folder_.log.debug("UserDb", "cannot open " + path + ": " + problem.message());
    return std::optional<Entry>();
  }
  if (auto lock = folder_.lock_byte(name, kAppendLockOffset); lock && *lock) {
    (void)quarantine_bad_log(name);
  }
  return std::optional<Entry>();
}

Status UserDbs::quarantine_bad_log(const std::string& name) {
  const std::string path = folder_.log_path(name);
  if (auto info = folder_.env.file_info(path); info && info->type != FileType::kRegular) {
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

void UserDbs::quarantine_file(const std::string& db, const std::string& path,
                              const Status& problem) {
  folder_.events.on_corrupt(kTierName, path, problem);
  folder_.quarantine.move_in(db, path);
  forget(db);
}

}  // namespace kcache::userlog
