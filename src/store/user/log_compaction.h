// Compaction of a user-tier log: a new log holding only the records kept,
// written whole beside the old one and renamed over it. What is not kept
// (replaced, removed, damaged or evicted records) gives its space back.
// `verify --repair` uses it; eviction is to pass it fewer records.
#pragma once

#include <kcache/status.h>

#include <string>
#include <vector>

#include "env/env.h"
#include "store/user/user_log.h"

namespace kcache {

struct CompactionOptions {
  std::string folder;  // the log's folder, synced after the rename
  bool sync = true;    // fdatasync the new log before the rename
  mode_t mode = 0600;  // of the new log (the umask applies)
};

// The new log: its generation, the records kept at their new offsets (in
// the order given), and where its last record ends.
struct CompactedLog {
  userlog::Generation generation{};
  std::vector<userlog::HintRecord> records;
  std::uint64_t end = userlog::kHeaderSize;
};

// Writes a new log of `records` (records of `log`, copied byte for byte in
// offset order) to a temporary file beside `path`, then renames it over
// `path`. The caller holds the append lock and writes the new hint; on a
// failure the temporary file is removed and `path` is left as it was.
Result<CompactedLog> write_compacted_log(Env& env, const File& log,
                                         std::vector<userlog::HintRecord> records,
                                         const std::string& path, const CompactionOptions& options);

// The temporary files of compactions of the log at `path` that were
// killed before their rename (`<path>.tmp.compact.*`), which may hold as
// much as the whole log. Only a holder of the append lock compacts, so the
// caller, holding it, may remove every one.
std::vector<std::string> abandoned_compactions(const Env& env, const std::string& path);
// Removes them (the caller holds the append lock).
void remove_abandoned_compactions(Env& env, const std::string& path);

}  // namespace kcache
