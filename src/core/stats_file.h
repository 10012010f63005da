// The counts of every process that uses a cache folder: `<user dir>/
// kcache.stats`, mapped shared by each (docs/formats.md §6). A process adds
// to one of 32 shards (picked by its pid), so that processes seldom write
// the same cache line; `kcache stats` sums the shards. Counts are relaxed
// atomic adds: a process killed mid-count loses nothing but that count.
#pragma once

#include <kcache/status.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/stats_counters.h"
#include "env/env.h"
#include "env/file_mapping.h"

namespace kcache {

class StatsFile {
 public:
  static constexpr std::uint32_t kShards = 32;
  static constexpr std::uint32_t kSlots = 64;  // counters per shard, room to add some
  static_assert(kStatCount <= kSlots);

  // Maps the stats file at `path` (never through a link). When it is
  // missing and `create`, it is made (mode `mode`), under a lock so that
  // two processes starting at once share one file; else kNotFound. A file
  // that is not a stats file is kCorruption (`create` replaces it).
  static Result<std::unique_ptr<StatsFile>> open(Env& env, const std::string& path, bool create,
                                                 mode_t mode = 0600);

  // The counters of the shard `pid` adds to.
  [[nodiscard]] std::atomic<std::uint64_t>* shard_for(std::uint64_t pid) const;
  // Every shard added up.
  [[nodiscard]] std::array<std::uint64_t, kStatCount> totals() const;
  // When the file was made, and when its counts were last zeroed.
  [[nodiscard]] std::int64_t created_unix() const;
  [[nodiscard]] std::int64_t zeroed_unix() const;
  // Sets every count to zero (counts added meanwhile may survive).
  void zero(std::int64_t now_unix);

 private:
  explicit StatsFile(std::shared_ptr<FileMapping> mapping) : mapping_(std::move(mapping)) {}
  static Result<std::unique_ptr<StatsFile>> map(Env& env, const std::string& path);
  [[nodiscard]] std::uint8_t* base() const { return mapping_->writable_bytes().data(); }
  std::shared_ptr<FileMapping> mapping_;
};

}  // namespace kcache
