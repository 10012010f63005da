#include "store/user/db_compactor.h"

#include <memory>
#include <utility>

#include "base/mutex.h"
#include "store/user/use_table.h"

namespace kcache::userlog {

Status DbCompactor::compact_without(const std::string& name,
                                    const std::set<std::uint64_t>& evicted) {
  // What is kept is copied without the append lock: a pass stopped or
  // slowed here (SIGSTOP, a slow disk) holds up no writer. The lock is
  // taken to copy what writers appended meanwhile, and to rename.
  std::shared_ptr<Db> seen = dbs_.current_db(name);
  if (seen == nullptr) return Status::ok();
  Generation generation;
  std::uint64_t copied_end = kHeaderSize;  // records before it are copied or dropped
  {
    ReaderLock read(seen->mutex);
    generation = seen->generation;
    copied_end = seen->read_end;
  }
  std::vector<HintRecord> kept;
  for (const HintRecord& record : seen->records()) {
    if (record.offset < copied_end && !evicted.contains(record.offset)) kept.push_back(record);
  }
  auto writer = CompactionWriter::start(folder_.env, folder_.log_path(name), compaction_options());
  if (!writer) return writer.status();
  if (Status s = (*writer)->copy(*seen->log, std::move(kept)); !s.is_ok()) return s;
  if (Status s = (*writer)->settle(); !s.is_ok()) return s;

  auto lock = folder_.append_lock(name, kAppendWait);
  if (!lock) return lock.status();
  auto db = appender_.db_for_append(name);
  if (!db) return db.status();
  if ((*db)->generation != generation) {
    return Status::unavailable(folder_.log_path(name) + " was replaced while it was compacted");
  }
  // Each key's newest record past what was copied: an entry written, or a
  // removal (kept, so that a scan of the new log does not bring back what
  // it removes).
  std::vector<HintRecord> appended;
  std::vector<CacheKey> removed;
  {
    ReaderLock read((*db)->mutex);
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

Status DbCompactor::compact_records(const std::string& name, const File& log,
                                    std::vector<HintRecord> records) {
  remove_abandoned_compactions(folder_.env, folder_.log_path(name));
  auto writer = CompactionWriter::start(folder_.env, folder_.log_path(name), compaction_options());
  if (!writer) return writer.status();
  if (Status s = (*writer)->copy(log, std::move(records)); !s.is_ok()) return s;
  return commit_compaction(name, **writer);
}

Status DbCompactor::commit_compaction(const std::string& name, CompactionWriter& writer) {
  Env& env = folder_.env;
  const std::string use_path = folder_.use_path(name);
  // The old table, opened before the files are replaced: its minutes
  // carry over.
  std::unique_ptr<UseTable> old;
  if (auto file = env.open_file(use_path, OpenMode::kReadWrite);
      file && folder_.opened_own_file(use_path, **file).is_ok()) {
    if (auto opened = UseTable::open(std::move(*file), use_path)) {
      old = std::move(*opened);
    }
  }
  auto compacted = writer.commit();
  if (!compacted) return compacted.status();
  dbs_.forget(name);
  Db db;
  db.generation = compacted->generation;
  {
    WriterLock lock(db.mutex);  // no one else holds `db`: for the analysis
    db.newest.apply_all(compacted->records);
    db.read_end = compacted->end;
  }
  Status hinted = dbs_.write_hint(name, db);
  const std::uint32_t made = old ? old->made() : minute_of(env.now_unix());
  std::vector<Use> uses;
  for (const HintRecord& record : db.records()) {
    uses.push_back({record.key, old ? old->last_use(record.key).value_or(made) : made});
  }
  if (Status s = UseTable::write(env, use_path, compacted->generation, uses.size(), uses, made,
                                 folder_.file_mode());
      !s.is_ok()) {
    folder_.log.debug("UserDb", "cannot write " + use_path + ": " + s.message());
  }
  if (old) old->retire();
  return hinted;
}

}  // namespace kcache::userlog
