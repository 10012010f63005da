// Reaching into a user-tier database from tests: make small entries, find a
// key's record in the log (to damage it), write bytes anywhere, forge hint
// records.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "base/hash.h"
#include "env/env.h"
#include "format/entry.h"
#include "store/user/user_log.h"

namespace kcache::testing {

// A small entry: `material`, keyed by it, whose payload is `payload`.
inline Entry small_entry(const std::string& material, std::string_view payload) {
  Entry entry;
  entry.material = material;
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.created_unix = 1700000000;
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()});
  entry.payload_size = payload.size();
  return entry;
}

// The newest record of `key` in the log at `log_path`, by a scan of the
// whole log (the hint is not trusted); nullopt when there is none.
inline std::optional<userlog::HintRecord> newest_record(const std::string& log_path,
                                                        const CacheKey& key) {
  auto log = Env::posix().open_random_access(log_path);
  if (!log) return std::nullopt;
  const std::uint64_t size = *(*log)->size();
  std::optional<userlog::HintRecord> found;
  for (std::uint64_t offset = userlog::kHeaderSize; offset < size;) {
    auto step = userlog::scan_step(**log, offset, size);
    if (!step || step->kind == userlog::ScanStep::Kind::kEnd) break;
    if (step->record.key == key) {
      if (step->kind == userlog::ScanStep::Kind::kEntry) found = step->record;
      if (step->kind == userlog::ScanStep::Kind::kRemoval) found.reset();
    }
    offset = step->next;
  }
  return found;
}

// Writes `bytes` over file `path` at `offset`.
inline void overwrite(const std::string& path, std::uint64_t offset, std::string_view bytes) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(file.good()) << path;
}

// Appends a hint record (with a valid check) to the hint file at `path`.
inline void append_hint(const std::string& path, const userlog::HintRecord& record) {
  const auto bytes = userlog::encode_hint(record);
  std::ofstream file(path, std::ios::binary | std::ios::app);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(file.good()) << path;
}

}  // namespace kcache::testing
