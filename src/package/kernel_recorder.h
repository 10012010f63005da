// KCACHE_RECORD: every kernel a program asks for, once, in a manifest of
// JSON lines (docs/formats.md, "Kernel manifest") that `kcache pack`
// compiles into a package for a target. One line per key: the backend, the
// compiler, the target, the options, the kernel names, the source and the
// in-memory headers (what a compile needs), and the headers on disk as the
// key saw them (name, where found, digest).
//
// Many processes may record into one manifest. A writer locks the file
// (an OFD lock: released if it dies), reads what others appended since it
// last looked, and appends its line only when no line has its key, with
// one write at the file's end (O_APPEND); a line cut short by a writer
// killed midway is ended, and skipped by readers. A manifest emptied,
// cut, rewritten or replaced by someone else (who takes no lock) is read
// again whole, and what the process had recorded in it forgotten: its
// kernels are recorded again as they are asked for (a known kernel's
// request looks at the file's size and identity, one stat, no lock). Any
// failure to record warns once and stops recording for the process: a
// request is never failed by its recording.
//
// The manifest is what `kcache pack` turns into compiler commands, so it
// is held to the trust rule (env/trusted_path.h,
// untrusted_appended_file_reason): a manifest another user could have
// written or could replace, or one named through their link, is refused
// with one warning (recording stops), unless it is shared on purpose
// (KCACHE_RECORD_SHARED). It is opened without following a link in its
// own place, and a new one is made readable by its owner alone (0600).
#pragma once

#include <kcache/compiler.h>
#include <kcache/key.h>

#include <memory>
#include <set>
#include <string>

#include "base/log.h"
#include "base/mutex.h"
#include "env/env.h"
#include "key/key_text.h"

namespace kcache {

class KernelRecorder {
 public:
  // `shared`: KCACHE_RECORD_SHARED (no trust rule; made 0666 as the umask
  // allows).
  KernelRecorder(std::string path, bool shared, Env& env, const Logger& log);

  // Adds the request to the manifest unless a line has its key.
  void record(const KernelRequest& request, const Compiler& compiler, const Target& target,
              const CacheKey& key, const KeyText& text);

  // The manifest line of a request (without its newline).
  static std::string line_of(const KernelRequest& request, const Compiler& compiler,
                             const Target& target, const CacheKey& key, const KeyText& text);

 private:
  // Each with mutex_ held (but open_manifest).
  Status append_once(const CacheKey& key, const std::string& line) REQUIRES(mutex_);
  // The manifest opened for appending, held to the trust rule unless
  // shared; `real` gets its path after links (the one locked).
  Result<std::unique_ptr<File>> open_manifest(std::string& real) const;
  // Reads what others appended since the last look (all of it when the
  // file was rewritten); the size read up to. A file cut while it is
  // read is read again.
  Result<std::uint64_t> catch_up(const File& file) REQUIRES(mutex_);
  // catch_up's one try, at `size`; kCorruption when the file was cut
  // meanwhile.
  Status read_new_lines(const File& file, std::uint64_t size) REQUIRES(mutex_);
  // The file is to be read from its start, and no key is known in it.
  void forget_what_was_read(const File& file) REQUIRES(mutex_);
  // Whether the manifest is no longer the one read: another file, shorter
  // than what was read, or other bytes where the last read ended.
  Result<bool> rewritten(const File& file, std::uint64_t size) const REQUIRES(mutex_);
  // Whether a look at the path (no lock) finds another file or a shorter one.
  bool looks_rewritten() const REQUIRES(mutex_);
  // Remembers the bytes just before read_up_to_, for rewritten().
  Status remember_tail(const File& file) REQUIRES(mutex_);

  const std::string path_;
  const bool shared_;
  Env& env_;
  const Logger& log_;
  Mutex mutex_;
  std::set<CacheKey> recorded_ GUARDED_BY(mutex_);   // keys with a line in the manifest
  std::uint64_t read_up_to_ GUARDED_BY(mutex_) = 0;  // the manifest read so far
  FileId read_id_ GUARDED_BY(mutex_);                // which file that was
  std::string tail_ GUARDED_BY(mutex_);              // its last bytes read, up to kTailBytes
  bool stopped_ GUARDED_BY(mutex_) = false;
};

}  // namespace kcache
