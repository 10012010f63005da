// The compile at the end of a lookup that missed: run the compiler, time
// it, wrap its output as an entry under the request's key; and the check,
// after it, that the files the key was derived from did not change while
// it ran (a header edited mid-compile). Stores nothing: the cache decides.
#pragma once

#include <kcache/compiler.h>
#include <kcache/kernel.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/byte_buffer.h"
#include "env/env.h"
#include "format/entry.h"
#include "key/key_builder.h"
#include "upkeep/stats_counters.h"

namespace kcache {

// A request's key, its material and the database it belongs in.
struct Keyed {
  CacheKey key;
  SharedText material;
  std::string db;
};

struct Compiled {
  Entry entry;  // keyed when the request was
  CachedKernel kernel;
  // Why the entry must not be stored (a file the compiler read that
  // kcache cannot check); empty when it may.
  std::string unstorable;
  // What the compiler said it read (CompileOutput::files_read), and when
  // it started (wall_clock_ns).
  std::vector<std::string> files_read;
  std::int64_t started_ns = 0;
};

// Runs the compiler (nothing it throws escapes) and wraps its output as an
// entry under `keyed` (null when the request could not be keyed); counts
// the compile, its time and its failure in `stats`.
Result<Compiled> compile_entry(const KernelRequest& request, Compiler& compiler,
                               const Target& target, const Keyed* keyed, const Env& env,
                               StatsCounters& stats);

// Whether the key holds files on disk (headers found there).
bool reads_files_on_disk(const Keyed& keyed);

// Whether what the key was derived from changed since `before` was taken
// (a header edited while its kernel compiled): the key is derived again
// (headers whose stamp moved are read anew), and every probe must find
// the same stamp. `rechecked` receives what the new derivation read.
bool inputs_changed(const KernelRequest& request, const Compiler& compiler, const Target& target,
                    const Keyed& keyed, const KeyedFiles& before, KeyedFiles& rechecked,
                    const Env& env, KeyMemo& memo);

}  // namespace kcache
