// Finds the headers a compile can read, so that their content goes into
// the key.
//
// Follows every #include, #import, #include_next, #embed and
// __has_include of the source and the forced includes (-include,
// --pre-include, -imacros), recursively, through the places the dialect's
// compiler searches, in its order (include_model.h). It ignores #if, so it
// may key a header the compile skips (an extra miss), never the other way
// round (a stale hit). Each header is keyed by its name, where it was found
// and its SHA-256, so a new file that shadows an old one changes the key
// too. An include whose name is a macro is looked up among the object-like
// macros the sources and options define; when that cannot settle it (or a
// file holds trigraphs), every in-memory header and every file under every
// folder the search can reach enter the key.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "inputs/file_digests.h"
#include "inputs/include_model.h"

namespace kcache {

struct ScannedHeader {
  std::string name;      // as written in the #include; a relative path for a folder walk
  std::string location;  // the path read, "memory:<name>", or "dir:<folder>" for a folder walk
  std::string digest;    // "sha256:<hex>"
  friend bool operator==(const ScannedHeader&, const ScannedHeader&) = default;
};

// One look at the disk the scan took: the path, and what was there (its
// stamp; nullopt when nothing).
struct ScanProbe {
  std::string path;
  std::optional<FileStamp> stamp;
};

struct IncludeScan {
  std::vector<ScannedHeader> headers;  // sorted by (name, location), no repeats
  // A computed include could not be settled: everything reachable was keyed.
  bool searched_everywhere = false;
  // The files on disk whose content was keyed.
  std::vector<FileId> files;
  // Every look at the disk, in order: while each finds the same again, the
  // scan would find the same headers (scan_memo.h). False when the scan
  // cannot be reused so (a folder walk, a file changed within a tick).
  std::vector<ScanProbe> probes;
  bool reusable = true;
  // Why the request cannot be keyed (a header that is not a regular file,
  // one found nowhere for a compiler whose own folders are unknown, more
  // headers than the limits); empty when it can.
  std::string unkeyable;
  // The key's fields for these headers, written by the key builder
  // (key/key_builder.cpp) so that a reused scan need not write them again.
  std::string key_fields;
};

struct ScanSettings {
  // -D values from the options (NAME or NAME=VALUE), for computed includes.
  std::vector<std::string> defines;
  // A header found in none of the places belongs to the compiler (its
  // built-in headers, covered by its identity). When false, such a header
  // makes the request unkeyable.
  bool unfound_is_compilers = true;
  // Whether keying everything the search can reach is enough for an
  // include kcache cannot settle (a macro it cannot expand may name any
  // file, an absolute one too): only where the compiler also lists what it
  // read (depend mode). Otherwise such a request is unkeyable.
  bool everywhere_is_enough = false;
  // Memoized digests of files on disk (may be null).
  FileDigests* digests = nullptr;
  std::size_t max_headers = 10000;
  std::uint64_t max_bytes = 256ull << 20;
};

// kIoError when a header exists but cannot be read (its content would be
// unknown, so no key can be trusted).
Result<IncludeScan> scan_includes(std::string_view source, const std::vector<Header>& memory,
                                  const IncludeModel& model, const Env& env,
                                  const ScanSettings& settings);

}  // namespace kcache
