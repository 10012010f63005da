// Compaction of a user-tier log: a new log holding only the records kept,
// written whole beside the old one and renamed over it. What is not kept
// (replaced, removed, damaged or evicted records) gives its space back.
// `verify --repair` uses it; eviction is to pass it fewer records.
//
// The new log may be written without the append lock (an eviction pass
// copies what it keeps while writers go on appending, and takes the lock
// only to copy what they appended meanwhile and rename): its temporary
// file is locked while it is written, so that the sweep of what killed
// compactions left passes it over.
#pragma once

#include <kcache/status.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "store/user/user_log.h"

namespace kcache {

struct CompactionOptions {
  std::string folder;  // the log's folder, synced after the rename
  bool sync = true;    // fdatasync the new log before the rename
  mode_t mode = 0600;  // of the new log (the umask applies)
};

// The new log: its generation, the records it holds at their new offsets
// (in the order written; a removal has size 0), and where its last record
// ends.
struct CompactedLog {
  userlog::Generation generation{};
  std::vector<userlog::HintRecord> records;
  std::uint64_t end = userlog::kHeaderSize;
};

// A new log of `path` being written to a temporary file beside it (locked
// while this lives), renamed over `path` by commit(); removed when this is
// destroyed uncommitted, leaving `path` as it was.
class CompactionWriter {
 public:
  static Result<std::unique_ptr<CompactionWriter>> start(Env& env, const std::string& path,
                                                         const CompactionOptions& options);
  ~CompactionWriter();
  CompactionWriter(const CompactionWriter&) = delete;
  CompactionWriter& operator=(const CompactionWriter&) = delete;

  // Copies `records` (entries of `log`) byte for byte, in offset order,
  // after what was written.
  Status copy(const File& log, std::vector<userlog::HintRecord> records);
  // Writes a removal of `key` after what was written.
  Status remove(const CacheKey& key);
  // Writes what is pending and syncs it (when the options sync): done
  // before the append lock is taken, the commit under it syncs only what
  // was added since.
  Status settle();
  // Syncs and closes the new log and renames it over `path`.
  Result<CompactedLog> commit();

 private:
  CompactionWriter(Env& env, std::string path, std::string temp, CompactionOptions options,
                   std::unique_ptr<WritableFile> out, std::unique_ptr<FileLock> lock);
  // Writes what is pending once it reaches the write size (or now).
  Status flush(bool all);

  Env& env_;
  const std::string path_;
  const std::string temp_;
  const CompactionOptions options_;
  std::unique_ptr<WritableFile> out_;
  std::unique_ptr<FileLock> lock_;
  std::vector<std::uint8_t> pending_;
  CompactedLog compacted_;
  bool done_ = false;
};

// Writes a new log of `records` (records of `log`, copied byte for byte in
// offset order) and renames it over `path` (CompactionWriter, at once).
// The caller holds the append lock and writes the new hint; on a failure
// `path` is left as it was.
Result<CompactedLog> write_compacted_log(Env& env, const File& log,
                                         std::vector<userlog::HintRecord> records,
                                         const std::string& path, const CompactionOptions& options);

// The temporary files of compactions of the log at `path` (`<path>.tmp.
// compact.*`): those of compactions killed before their rename may hold as
// much as the whole log.
std::vector<std::string> abandoned_compactions(const Env& env, const std::string& path);
// Whether `file_name` is such a temporary file (of any log).
bool is_compaction_temp(std::string_view file_name);
// Removes those no compaction is writing (their lock is free). The caller
// holds the append lock, so that none is being committed.
void remove_abandoned_compactions(Env& env, const std::string& path);

}  // namespace kcache
