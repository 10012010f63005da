// Reads of a user-tier log through a mapping of it (docs/design.md §3.7,
// "Mapped user-tier hits"): a hit lends a view of the mapped record, as a
// system-tier hit does, instead of reading it into a buffer.
//
// A record's checksum is paid once per process while the log is as it
// was: its bytes are checked in full the first time, and afterwards only
// its header and key, for as long as the log's fstat (size, mtime, ctime,
// inode) stays what it was when the epoch its check was made in began.
// The caller keeps that epoch with the record (user_db.h, IndexedRecord),
// so that a hit looks up no other table.
// Each such later read looks at the stamp first; a first read of a record
// the mapping already covers does not (its full check holds whatever the
// log holds there now). Any write to the log (another process's append,
// an edit in place, a truncation) moves the stamp, and every record is
// checked in full again after the next look. kcache never writes a
// log below its end and replaces it whole by a rename, so a record that
// was checked cannot change while the stamp holds; what a timestamp's
// granularity could hide (a write in the same clock tick as the one
// before) is left to `kcache verify`, as for the system tier.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "env/env.h"
#include "env/file_mapping.h"
#include "format/entry.h"
#include "store/user/user_log.h"

namespace kcache::userlog {

class MappedLog {
 public:
  // The entry of `record` in `log`, checked, its bytes a view of the
  // mapping; nullopt when it is not served from the mapping (the log
  // cannot be mapped, the record lies past the file's end, or it fails a
  // check): the caller reads it with read_at, which says what is wrong.
  // `checked_epoch` is the epoch in which the record last passed its full
  // check (0: never), and is set to the current one when it passes it now.
  std::optional<Entry> read(const File& log, const HintRecord& record, std::uint32_t& checked_epoch)
      EXCLUDES(mutex_);

 private:
  Mutex mutex_;  // guards the members below
  std::shared_ptr<const FileMapping> mapping_ GUARDED_BY(mutex_);
  // The log's stamp when the current epoch began.
  std::optional<FileStamp> stamp_ GUARDED_BY(mutex_);
  // Moves with each new stamp; never 0, which means "never checked".
  std::uint32_t epoch_ GUARDED_BY(mutex_) = 1;
  // A size the log could not be mapped at (no guard slot, say): not tried
  // again until the log's size changes.
  std::optional<std::uint64_t> unmappable_at_ GUARDED_BY(mutex_);
};

}  // namespace kcache::userlog
