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
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "env/env.h"
#include "env/file_mapping.h"
#include "upkeep/stats_counters.h"

namespace kcache {

class StatsFile {
 public:
  static constexpr std::uint32_t kShards = 32;
  static constexpr std::uint32_t kSlots = 64;  // counters per shard, room to add some
  static_assert(kStatCount <= kSlots);

  // Told of each thing `open` moved out of the way: its path, and why it
  // was not a stats file (or lock file).
  using SetAside = std::function<void(const std::string& path, const std::string& why)>;

  // Maps the stats file at `path`, looked at itself before it is opened
  // (a link, a FIFO or a device there is never opened). When it is
  // missing and `create`, it is made (mode `mode`), under a lock on
  // `path`.lock so that two processes starting at once share one file;
  // else kNotFound. Anything else in its place (a folder, a FIFO, a link,
  // a file that is not a stats file, counts no process could have made)
  // is kCorruption, saying what it is; with `create` it is moved into the
  // folder's quarantine/ and a new file made, as is a lock file that is
  // not a regular file (it would stop every process sharing its counts);
  // `set_aside` is told of each.
  static Result<std::unique_ptr<StatsFile>> open(Env& env, const std::string& path, bool create,
                                                 mode_t mode = 0600,
                                                 const SetAside& set_aside = nullptr);

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
  // Why its counts cannot be right (one at or past kMostCount, or a time
  // zeroed past any date); nullopt when they can.
  [[nodiscard]] std::optional<std::string> implausible() const;
  [[nodiscard]] std::uint8_t* base() const { return mapping_->writable_bytes().data(); }
  std::shared_ptr<FileMapping> mapping_;
};

}  // namespace kcache
