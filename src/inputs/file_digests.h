// The digests of headers on disk, and the directives in them, reused while
// the file's stamp (device, inode, size, mtime, ctime) is unchanged, as
// ccache's direct mode does. A file whose stamp is too close to now to be
// told from an edit in the same timestamp tick is read again every time
// (ccache's guard; changed_recently). Thread-safe.
#pragma once

#include <kcache/status.h>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "env/env.h"
#include "inputs/directives.h"

namespace kcache {

// How far apart two edits must be for their timestamps to differ: file
// systems with nanosecond timestamps take them from a clock that ticks
// every few milliseconds; those with whole seconds (seen as stamps without
// a fraction) need a second and then some.
inline constexpr std::chrono::milliseconds kFineTimestampTick{20};
inline constexpr std::chrono::seconds kCoarseTimestampTick{2};

struct FileContent {
  std::string digest;  // "sha256:<64 hex>"
  std::uint64_t size = 0;
  // What the file includes; shared with the memo.
  std::shared_ptr<const SourceDirectives> directives;
};

class FileDigests {
 public:
  // The file at `path`, a regular file whose stamp was just taken: its
  // digest and directives, from the memo when the stamp matches, else read
  // through `env`. kIoError when it cannot be read.
  Result<FileContent> get(const std::string& path, const FileStamp& stamp, const Env& env);

  // The digest and directives of `text` (a request's source or in-memory
  // header): from the memo when the same text was seen before (compared
  // byte for byte, not by a hash), else computed. Directives are found only
  // when `directives` (a source that cannot name a file needs none).
  FileContent text(std::string_view text, bool directives);

  // How many files were read (not answered from the memo); for tests.
  [[nodiscard]] std::uint64_t reads() const;

 private:
  struct Known {
    FileStamp stamp;
    FileContent content;
  };
  static constexpr std::size_t kMaxFiles = 16384;

  struct KnownText {
    std::string text;
    FileContent content;
  };
  static constexpr std::size_t kMaxTextBytes = 64u << 20;

  mutable Mutex mutex_;
  std::unordered_map<std::string, Known> known_ GUARDED_BY(mutex_);
  std::uint64_t reads_ GUARDED_BY(mutex_) = 0;
  // By the XXH3-64 of the text; several texts may share one.
  std::unordered_multimap<std::uint64_t, KnownText> texts_ GUARDED_BY(mutex_);
  std::size_t text_bytes_ GUARDED_BY(mutex_) = 0;
};

// Reads and digests `path` without a memo.
Result<FileContent> read_file_content(const std::string& path, const Env& env);

// Whether a file with `stamp` changed too close to `reference_ns` (wall
// clock, ns since the epoch; now when 0) for an edit after that moment to
// be told from one before: within one timestamp tick of it, or later.
bool changed_recently(const FileStamp& stamp, std::int64_t reference_ns = 0);

// The wall clock in ns since the epoch.
std::int64_t wall_clock_ns();

}  // namespace kcache
