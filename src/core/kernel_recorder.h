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
// one write; a line cut short by a writer killed midway is ended, and
// skipped by readers. Any failure to record warns once and stops recording
// for the process: a request is never failed by its recording.
#pragma once

#include <kcache/compiler.h>
#include <kcache/key.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/log.h"
#include "env/env.h"

namespace kcache {

class KernelRecorder {
 public:
  KernelRecorder(std::string path, Env& env, const Logger& log);

  // Adds the request to the manifest unless a line has its key.
  void record(const KernelRequest& request, const Compiler& compiler, const Target& target,
              const CacheKey& key, const KeyText& text);

  // The manifest line of a request (without its newline).
  static std::string line_of(const KernelRequest& request, const Compiler& compiler,
                             const Target& target, const CacheKey& key, const KeyText& text);

 private:
  Status append_once(const CacheKey& key, const std::string& line);  // with mutex_ held
  Status catch_up(File& file, std::uint64_t size);                   // with mutex_ held

  const std::string path_;
  Env& env_;
  const Logger& log_;
  std::mutex mutex_;
  std::set<CacheKey> recorded_;   // guarded by mutex_: keys with a line
  std::uint64_t read_up_to_ = 0;  // guarded by mutex_: the manifest read so far
  bool stopped_ = false;          // guarded by mutex_
};

}  // namespace kcache
