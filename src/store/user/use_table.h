// When each entry of a user-tier database was last used: `<db>.ukdu`, a
// table every process maps shared, so that a hit records its minute with
// one store in memory and no system call (docs/design.md §3.9, "Limits and
// eviction"; docs/formats.md §3). It orders eviction and nothing else: a
// table that is missing, damaged or full costs accuracy, never a binary.
//
// Layout: a 64-byte header (magic KCUUSE, version, slot count, the
// generation of the log it was made for, the minute it was made, a check of
// those; then the retired flag, outside the check), then `slots` 16-byte
// slots: the key's first 8 bytes (0: empty), the minute (since the Unix
// epoch) the key was last used, 4 bytes unused. Open addressing, linear
// probing; slots are claimed with a compare-and-swap, minutes stored only
// when they change.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "env/env.h"
#include "env/file_mapping.h"
#include "store/user/user_log.h"

namespace kcache::userlog {

inline constexpr std::string_view kUseSuffix = ".ukdu";

// A key's use, as a table holds it.
struct Use {
  CacheKey key;
  std::uint32_t minute = 0;
};

// The minute `unix_seconds` falls in.
inline std::uint32_t minute_of(std::int64_t unix_seconds) {
  return unix_seconds <= 0 ? 0u : static_cast<std::uint32_t>(unix_seconds / 60);
}

class UseTable {
 public:
  // The fewest slots a table has, and the most.
  static constexpr std::uint32_t kMinSlots = 256;
  static constexpr std::uint32_t kMaxSlots = 1u << 26;

  // Maps the table `file` (opened read-write at `path`; the caller has
  // checked that it is no link): kCorruption when it is not a use table.
  // A table made for an older log of the database is still right: keys
  // name their content, so a key's last use is its last use (a process
  // still reading the log a compaction replaced records into the new
  // table).
  static Result<std::unique_ptr<UseTable>> open(std::unique_ptr<File> file,
                                                const std::string& path);

  // Writes a new table for the log of `generation`, sized for `entries`
  // keys, holding `uses`, made at minute `made`, and renames it over
  // `path` (mode `mode`). The caller holds the append lock.
  static Status write(Env& env, const std::string& path, const Generation& generation,
                      std::size_t entries, std::span<const Use> uses, std::uint32_t made,
                      mode_t mode);

  // Records that `key` was used in `minute`: a store only when its slot
  // holds another minute. Does nothing when the table is full.
  void touch(const CacheKey& key, std::uint32_t minute);
  // The minute `key` was last used, nullopt when the table has no slot of
  // it (used when the table was made, for eviction's purposes).
  [[nodiscard]] std::optional<std::uint32_t> last_use(const CacheKey& key) const;
  // When the table was made.
  [[nodiscard]] std::uint32_t made() const { return made_; }
  [[nodiscard]] std::uint32_t slots() const { return slots_; }

  // Whether a newer table has replaced this one (its mappers open that one).
  [[nodiscard]] bool retired() const;
  void retire();

  // Whether a table holding `entries` keys should be rebuilt larger.
  [[nodiscard]] bool too_full_for(std::size_t entries) const {
    return entries * 2 > slots_ && slots_ < kMaxSlots;
  }

 private:
  UseTable(std::shared_ptr<FileMapping> mapping, std::uint32_t slots, std::uint32_t made)
      : mapping_(std::move(mapping)), slots_(slots), made_(made) {}
  std::uint8_t* slot(std::uint32_t index) const;

  std::shared_ptr<FileMapping> mapping_;
  std::uint32_t slots_;
  std::uint32_t made_;
};

}  // namespace kcache::userlog
