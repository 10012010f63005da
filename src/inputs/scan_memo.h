// Scans of a request's headers, reused while the disk looks the same: a
// hit of a kernel that includes 20 headers then costs one stat per look
// the scan took (each header found, each place it was not), not the scan.
// A scan is found by everything it was derived from (the source, the
// in-memory headers, the search, the macros: compared in full, not by a
// hash), and used only while every probe (include_scanner.h) finds the
// same stamp, or the same nothing, at its path. A scan that walked folders
// or saw a file changed within a timestamp tick is not kept. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "env/env.h"
#include "inputs/include_scanner.h"

namespace kcache {

class ScanMemo {
 public:
  // `inputs`: every input of the scan, serialized (key_builder.cpp).
  std::shared_ptr<const IncludeScan> find(const std::string& inputs, const Env& env);
  void keep(std::string inputs, IncludeScan scan);

 private:
  static constexpr std::size_t kMaxScans = 1024;
  static constexpr std::size_t kMaxBytes = 64u << 20;

  struct Kept {
    std::string inputs;  // compared in full: the map's key is only a hash
    std::shared_ptr<const IncludeScan> scan;
  };

  std::mutex mutex_;
  // By the XXH3-64 of the inputs.
  std::unordered_multimap<std::uint64_t, Kept> scans_;  // guarded by mutex_
  std::size_t bytes_ = 0;                               // guarded by mutex_
};

}  // namespace kcache
