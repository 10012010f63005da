// Scans of a request's headers, reused while the disk looks the same: a
// hit of a kernel that includes 20 headers then costs one stat per look
// the scan took (each header found, each place it was not), not the scan;
// and once the scan is reused again and its looks can be watched
// (env/change_watch.h), one poll while nothing watched changed.
//
// A scan is found by everything it was derived from (the source, the
// in-memory headers, the search, the macros: compared in full, not by a
// hash), and used only while every probe (include_scanner.h) finds the
// same stamp, or the same nothing, at its path. A watched scan skips that
// check while the watch's count of changes is the one it had when the
// check last passed, and for a second at most (a write through a shared
// mapping sends no event). A scan that walked folders or saw a file
// changed within a timestamp tick is not kept. A caller may keep a note
// beside a scan (what it derived from both), returned while the scan
// holds: key_builder.cpp keeps whole key heads so, in a second memo found
// by the whole request. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "env/env.h"
#include "inputs/include_scanner.h"

namespace kcache {

// Everything a scan was derived from (key_builder.cpp): `shape`, the
// search, the macros and the in-memory headers' names, each piece
// length-prefixed, with the size of each text; `texts`, the request's
// texts (the in-memory headers' contents, the source), by view, so that a
// lookup copies none of them.
struct ScanInputs {
  std::string shape;
  std::vector<std::string_view> texts;
};

// What a caller derived from a scan and its inputs, kept beside the scan
// (key_builder.cpp: a key text's head, and the key of that head with the
// source the inputs hold).
struct ScanNote {
  std::shared_ptr<const std::string> text;
  CacheKey key{};
};

// A scan found again, with what was kept beside it.
struct ScanFound {
  std::shared_ptr<const IncludeScan> scan;  // null: not found, or no longer true
  std::shared_ptr<const ScanNote> note;     // keep()'s `note`, or null
};

// Whether every probe of `scan` finds what the scan found: the same stamp,
// or the same nothing, at its path.
bool probes_hold(const IncludeScan& scan, const Env& env);

class ScanMemo {
 public:
  ScanFound find(const ScanInputs& inputs, const Env& env);
  // Copies the texts of `inputs`. `note`: what the caller derived from the
  // inputs and the scan (key_builder.cpp keeps a whole key text's head),
  // returned with the scan while it holds.
  void keep(const ScanInputs& inputs, IncludeScan scan);
  void keep(const ScanInputs& inputs, std::shared_ptr<const IncludeScan> scan,
            std::shared_ptr<const ScanNote> note = nullptr);

  // How long a watched scan may go without a stat check.
  static constexpr std::chrono::seconds kRecheckAfter{1};

 private:
  static constexpr std::size_t kMaxScans = 1024;
  static constexpr std::size_t kMaxBytes = 64u << 20;

  struct Kept {
    // Compared in full: the map's key is only a hash.
    std::string shape;
    std::vector<std::string> texts;
    std::shared_ptr<const IncludeScan> scan;
    std::shared_ptr<const ScanNote> note;
    // How often its probes were checked and held.
    std::uint32_t checks = 0;
    // Watched: the watch's count of changes when the probes last held
    // (read before that check), and when that was (steady clock, ns); 0
    // when the scan is not watched.
    std::uint64_t quiet_at = 0;
    std::int64_t checked_ns = 0;  // coarse monotonic clock
    // A probe is a relative path: the working folder then (it must not
    // have moved for the watch to speak for the probes).
    bool relative = false;
    FileId working_folder{};
    // A probe could not be watched: the scan stays on the stat check.
    bool unwatchable = false;
  };

  // Watches every probe of `scan`; false when one cannot be watched.
  static bool watch_probes(const IncludeScan& scan, ChangeWatch& watch);
  static bool same_inputs(const Kept& kept, const ScanInputs& inputs);
  // The entry holding `scan`, or null.
  Kept* kept_for(std::uint64_t hash, const std::shared_ptr<const IncludeScan>& scan)
      REQUIRES(mutex_);

  Mutex mutex_;
  // By the XXH3-64 of the inputs.
  std::unordered_multimap<std::uint64_t, Kept> scans_ GUARDED_BY(mutex_);
  std::size_t bytes_ GUARDED_BY(mutex_) = 0;
};

}  // namespace kcache
