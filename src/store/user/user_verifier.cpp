#include "store/user/user_verifier.h"

#include <set>
#include <utility>

#include "base/byte_buffer.h"
#include "base/mutex.h"
#include "store/user/log_compaction.h"

namespace kcache::userlog {

Status UserVerifier::verify(bool repair, VerifyReport& report) {
  if (trust_.refusal() != nullptr) {
    report.problems.push_back({folder_.options.dir, trust_.refusal_reason(), false});
    return Status::ok();
  }
  auto names = dbs_.names();
  if (!names) return names.status();
  // A folder this process cannot write in (a read-only mount, mode 0555)
  // is checked as it is: no lock can be made there, nothing can be mended.
  const bool read_only = !names->empty() && !trust_.folder_writable();
  if (read_only) {
    repair = false;
    report.cannot_repair = "the user cache " + folder_.options.dir + " is read-only here";
  }
  for (const auto& db : *names) {
    ++report.databases_checked;
    verify_db(db, repair, /*still=*/read_only, report);
    for (const auto& path : stale_temp_files(db)) {
      bool fixed = repair && folder_.env.remove_file(path).is_ok();
      report.problems.push_back({path, "temporary file left by an interrupted write", fixed});
    }
  }
  return Status::ok();
}

void UserVerifier::verify_db(const std::string& name, bool repair, bool still,
                             VerifyReport& report) {
  Env& env = folder_.env;
  const std::string path = folder_.log_path(name);
  const std::string hint_path = folder_.hint_path(name);
  // A still log to look at: under the append lock, unless none can write.
  Result<std::unique_ptr<FileLock>> lock =
      still ? Result<std::unique_ptr<FileLock>>(std::make_unique<FileLock>())
            : folder_.append_lock(name, kAppendWait);
  if (!lock) {
    report.problems.push_back({path, "cannot check: " + lock.status().message(), false});
    return;
  }
  // No compaction runs while the append lock is held: whatever one left
  // was left by a compaction that was killed, however recent.
  for (const std::string& temp : abandoned_compactions(env, path)) {
    bool fixed = repair && env.remove_file(temp).is_ok();
    report.problems.push_back({temp, "temporary file left by an interrupted compaction", fixed});
  }
  // A log moved aside takes its hint with it, in the same pass.
  const auto move_log_aside = [&] {
    if (!folder_.quarantine.move_in(name, path)) return false;
    dbs_.forget(name);
    return env.remove_all(hint_path).is_ok();
  };
  auto info = env.file_info(path);
  if (!info) {
    bool fixed = repair && env.remove_all(hint_path).is_ok();
    report.problems.push_back({hint_path, "hint file without its log", fixed});
    return;
  }
  if (info->type != FileType::kRegular) {
    bool fixed = repair && move_log_aside();
    report.problems.push_back({path, "not a regular file", fixed});
    return;
  }
  auto log = repair ? env.open_file(path, OpenMode::kReadWrite) : env.open_random_access(path);
  if (log) {
    if (Status own = folder_.opened_own_file(path, **log); !own.is_ok()) log = own;
  }
  if (!log) {
    report.problems.push_back({path, log.status().message(), false});
    return;
  }
  std::uint8_t header[kHeaderSize];
  Status read = (*log)->read_at(0, header);
  auto generation = read.is_ok() ? decode_header(FileKind::kLog, header) : Result<Generation>(read);
  if (!generation) {
    log->reset();
    bool fixed = repair && move_log_aside();
    report.problems.push_back({path, generation.status().message(), fixed});
    return;
  }
  auto scan = scan_log(**log);
  if (!scan) {
    report.problems.push_back({path, scan.status().message(), false});
    return;
  }
  report.entries_ok += scan->entries;
  report.entries_checked += scan->entries;

  std::vector<VerifyReport::Problem> found;
  const RecordIndex hinted = read_hint_file(name, *generation, found);
  const bool hint_file_wrong = !found.empty();
  // Damaged bytes where the hint places a present entry are a lost
  // entry, named by its key. Damaged bytes no one refers to (a record
  // already found bad by a lookup and removed, or replaced since) are
  // dead space, which compaction drops; they are not a problem.
  std::map<std::uint64_t, CacheKey> damaged_keys;  // region offset -> key
  for (const ScanStep& step : scan->damaged) {
    bool named = false;  // one entry names the region
    hinted.for_each([&](const IndexedRecord& r) {
      const HintRecord& record = r.record;
      if (named || record.removal() || record.offset < step.record.offset ||
          record.offset >= step.next) {
        return;
      }
      named = true;
      damaged_keys[step.record.offset] = record.key;
      ++report.entries_checked;
      found.push_back({path + " at offset " + std::to_string(step.record.offset),
                       "entry " + record.key.hex() + ": " + step.problem.message() + " (" +
                           std::to_string(step.damaged) + " bytes)",
                       false});
    });
  }
  const bool damaged = !damaged_keys.empty();
  if (scan->torn_tail) {
    found.push_back({path,
                     "an interrupted write left " + std::to_string(scan->torn_tail->damaged) +
                         " bytes at the end of the log",
                     false});
  }
  const bool hint_wrong = compare_hint(name, *scan, hinted, damaged_keys, found) || hint_file_wrong;

  if (repair && !found.empty()) {
    Status fixed;
    if (damaged) {
      fixed = compact(name, **log, *scan, damaged_keys);
    } else {
      if (scan->torn_tail) fixed = (*log)->truncate(scan->torn_tail->record.offset);
      if (fixed.is_ok() && hint_wrong) {
        Db db;
        db.generation = *generation;
        {
          WriterLock index_lock(db.mutex);  // no one else holds `db`: for the analysis
          db.index_scan(scan->live, scan->end);
        }
        fixed = dbs_.write_hint(name, db);
      }
    }
    dbs_.forget(name);
    for (auto& problem : found) problem.repaired = fixed.is_ok();
    if (!fixed.is_ok()) found.push_back({path, "repair failed: " + fixed.message(), false});
  }
  report.problems.insert(report.problems.end(), found.begin(), found.end());
}

RecordIndex UserVerifier::read_hint_file(const std::string& name, const Generation& generation,
                                         std::vector<VerifyReport::Problem>& found) {
  const std::string path = folder_.hint_path(name);
  auto hint = folder_.env.open_random_access(path);
  if (hint) {
    if (Status own = folder_.opened_own_file(path, **hint); !own.is_ok()) hint = own;
  }
  if (!hint) {
    found.push_back({path, hint.status().message(), false});
    return {};
  }
  Db db;
  db.hint = std::move(*hint);
  if (!hint_describes(*db.hint, generation)) {
    found.push_back({path, "the hint file does not describe this log", false});
    return {};
  }
  WriterLock lock(db.mutex);  // no one else holds `db`: for the analysis
  db.read_hint();
  if (auto size = db.hint->size(); size && *size > db.hint_read) {
    found.push_back({path,
                     "damaged hint record at offset " + std::to_string(db.hint_read) + " (" +
                         std::to_string(*size - db.hint_read) + " bytes not read)",
                     false});
  }
  return std::move(db.newest);
}

bool UserVerifier::compare_hint(const std::string& name, const LogScan& scan,
                                const RecordIndex& hinted,
                                const std::map<std::uint64_t, CacheKey>& damaged_keys,
                                std::vector<VerifyReport::Problem>& found) {
  const std::size_t before = found.size();
  for (const auto& [key, record] : scan.live) {
    const IndexedRecord* hinted_record = hinted.find(key);
    if (hinted_record == nullptr || hinted_record->record.offset != record.offset) {
      found.push_back({folder_.log_path(name),
                       "entry " + key.hex() + " at offset " + std::to_string(record.offset) +
                           " is not in the hint file",
                       false});
    }
  }
  std::set<CacheKey> damaged;
  for (const auto& [offset, key] : damaged_keys) damaged.insert(key);
  hinted.for_each([&](const IndexedRecord& r) {
    const HintRecord& record = r.record;
    if (!record.removal() && !scan.live.contains(record.key) && !damaged.contains(record.key)) {
      found.push_back({folder_.hint_path(name),
                       "hint names entry " + record.key.hex() + " which the log does not hold",
                       false});
    }
  });
  return found.size() > before || !damaged.empty();
}

Status UserVerifier::compact(const std::string& name, const File& log, const LogScan& scan,
                             const std::map<std::uint64_t, CacheKey>& damaged_keys) {
  // The damaged records that held an entry are kept (up to a size: a
  // region of garbage can be any length); dead damaged bytes are dropped.
  for (const ScanStep& step : scan.damaged) {
    auto key = damaged_keys.find(step.record.offset);
    if (key == damaged_keys.end() || step.damaged > kMaxQuarantineCopy) continue;
    ByteBuffer bytes = ByteBuffer::allocate(step.damaged);
    if (log.read_at(step.record.offset, bytes.mutable_span()).is_ok()) {
      (void)folder_.quarantine.keep_copy(name, key->second.hex(), bytes.span());
    }
  }
  std::vector<HintRecord> records;
  for (const auto& [key, record] : scan.live) records.push_back(record);
  return compactor_.compact_records(name, log, std::move(records));
}

std::vector<std::string> UserVerifier::stale_temp_files(const std::string& name) const {
  std::vector<std::string> files;
  Env& env = folder_.env;
  auto names = env.list_dir(folder_.options.dir);
  if (!names) return files;
  const std::int64_t now = env.now_unix();
  for (const auto& file : *names) {
    if (file.is_dir || file.name.find(".tmp.compact.") != std::string::npos) continue;
    if (!file.name.starts_with(name + std::string(kLogSuffix) + ".tmp.") &&
        !file.name.starts_with(name + std::string(kHintSuffix) + ".tmp.")) {
      continue;
    }
    const std::string path = folder_.options.dir + "/" + file.name;
    auto info = env.file_info(path);
    if (info && info->type == FileType::kRegular && now - info->modified_unix > kStaleTempSeconds) {
      files.push_back(path);
    }
  }
  return files;
}

}  // namespace kcache::userlog
