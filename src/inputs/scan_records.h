// Whole key heads kept on disk, so that a new process keys a request with
// includes it has never seen in that process, but the user has, at the
// cost of one file read and the scan's probes (a stat each), not the scan.
//
// A program like CuPy asks each of its kernels once per process, each a
// distinct source including the same thousand CCCL headers: the memo of a
// process (scan_memo.h) never hits, and every request scanned them again
// (~50-90 ms a hit on the H200 machine). A record keeps what the memo of
// heads keeps (key_builder.cpp): the head of the key text and the scan's
// files and probes, found by everything the head was derived from
// (ScanInputs: compared in full, the file name is only their XXH3-128),
// used while every probe finds the same stamp, or the same nothing, at its
// path, exactly as the memo's check.
//
// One file a record, <dir>/<32 hex>.scan, written whole (a temporary
// file, then rename) with an XXH3-128 of its bytes at its end; a damaged,
// foreign or other-version file is no record. Records are an optimisation:
// any failure to read or write one only means the scan runs. The folder
// holds at most kMaxRecords; a write past that removes the oldest half.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/mutex.h"
#include "env/env.h"
#include "inputs/scan_memo.h"

namespace kcache {

// A record found again: the scan's files and probes (its headers are in
// the head), and the head.
struct ScanRecord {
  std::shared_ptr<const IncludeScan> scan;
  std::shared_ptr<const std::string> head;
};

class ScanRecords {
 public:
  // `dir`: <cache dir>/<version>/scans, created on the first write.
  // `trusted`: whether the folder is the user's alone (env/trusted_path.h,
  // which this floor cannot see), asked until it says yes once the folder
  // exists; no record is read or written before.
  // `max_records`: how many the folder keeps (kMaxRecords; tests give less).
  ScanRecords(std::string dir, Env& env, std::function<bool()> trusted,
              std::size_t max_records = kMaxRecords)
      : dir_(std::move(dir)), env_(env), trusted_(std::move(trusted)), max_records_(max_records) {}

  // The record of `inputs` when present, intact, of these inputs and
  // still true (every probe holds).
  [[nodiscard]] std::optional<ScanRecord> find(const ScanInputs& inputs) const;
  // Keeps `head` and what `scan` looked at for `inputs`; nothing when the
  // scan may not be reused (scan_memo.h's rule) or looked at no file.
  void keep(const ScanInputs& inputs, const IncludeScan& scan, const std::string& head);

  // Removes every record (kcache clear).
  void clear();

  static constexpr std::size_t kMaxRecords = 1024;
  // A record larger than this is not kept (a scan of tens of thousands of
  // headers is not worth a file).
  static constexpr std::size_t kMaxRecordBytes = 16u << 20;

 private:
  [[nodiscard]] bool trusted() const;
  // Removes the oldest half when the folder holds more than max_records_,
  // never `just_written` (a record's name).
  void trim(const std::string& just_written) REQUIRES(mutex_);

  std::string dir_;
  Env& env_;
  std::function<bool()> trusted_;
  std::size_t max_records_;
  mutable std::atomic<bool> trusted_seen_{false};
  Mutex mutex_;
  // Records written by this process since the folder was last counted.
  std::size_t written_ GUARDED_BY(mutex_) = 0;
  std::optional<std::size_t> counted_ GUARDED_BY(mutex_);
};

}  // namespace kcache
