#include "upkeep/stats_file.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "format/endian.h"
#include "store/user/quarantine.h"

namespace kcache {
namespace {

constexpr std::uint8_t kMagic[8] = {'K', 'C', 'S', 'T', 'A', 'T', 'S', 0};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 64;
constexpr std::size_t kChecked = 32;   // the check covers [0, 32): magic to created
constexpr std::size_t kZeroedAt = 48;  // outside the check: changed in place
constexpr std::size_t kShardBytes = StatsFile::kSlots * 8;
constexpr std::size_t kFileSize = kHeaderSize + StatsFile::kShards * kShardBytes;

std::uint64_t check_of(const std::uint8_t* header) {
  const Checksum128 check = xxh3_128(std::span<const std::uint8_t>(header, kChecked));
  return le::get_u64(check.data());
}

std::vector<std::uint8_t> new_file(std::int64_t now) {
  std::vector<std::uint8_t> bytes(kFileSize, 0);
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  le::put_u32(bytes.data() + 8, kVersion);
  le::put_u32(bytes.data() + 12, StatsFile::kShards);
  le::put_u32(bytes.data() + 16, StatsFile::kSlots);
  le::put_u64(bytes.data() + 24, static_cast<std::uint64_t>(now));
  le::put_u64(bytes.data() + kChecked, check_of(bytes.data()));
  le::put_u64(bytes.data() + kZeroedAt, static_cast<std::uint64_t>(now));
  return bytes;
}

// No count reaches this: a billion a second for 146 years, or 4 EiB
// served. A file that holds one was damaged or written by another program.
constexpr std::uint64_t kMostCount = std::uint64_t{1} << 62;
// 9999-12-31: a later time of zeroing is no time the file was zeroed at.
constexpr std::int64_t kLatestUnix = 253'402'300'799;

std::atomic_ref<std::uint64_t> word(std::uint8_t* at) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at));
}

// What a thing that is not a regular file is, for a message.
std::string kind_words(FileType type) {
  switch (type) {
    case FileType::kDirectory:
      return "a folder";
    case FileType::kSymlink:
      return "a symbolic link (not followed)";
    default:
      return "not a regular file (a FIFO, socket or device)";
  }
}

// Moves `path` into the quarantine/ of the folder holding it, and says so.
void move_aside(Env& env, const std::string& path, const std::string& why,
                const StatsFile::SetAside& set_aside) {
  const std::string folder = path.substr(0, path.find_last_of('/'));
  Quarantine(env, folder).move_in("", path);
  if (set_aside) set_aside(path, why);
}

}  // namespace

Result<std::unique_ptr<StatsFile>> StatsFile::map(Env& env, const std::string& path) {
  // Looked at before it is opened, never through a link: a FIFO or a
  // device in its place is not opened (nor what a link names).
  auto seen = env.file_info(path);
  if (!seen) return seen.status();
  if (seen->type != FileType::kRegular) {
    return Status::corruption(path + " is " + kind_words(seen->type) + ", not a kcache stats file");
  }
  auto file = env.open_file(path, OpenMode::kReadWrite);
  if (!file) return file.status();
  auto info = env.file_info(path);
  if (!info) return info.status();
  if (info->type != FileType::kRegular || !(info->id == (*file)->id())) {
    return Status::io_error(path + " was replaced as it was opened");
  }
  auto size = (*file)->size();
  if (!size) return size.status();
  std::uint8_t header[kHeaderSize];
  if (*size != kFileSize || !(*file)->read_at(0, header).is_ok() ||
      std::memcmp(header, kMagic, sizeof kMagic) != 0 || le::get_u32(header + 8) != kVersion ||
      le::get_u32(header + 12) != kShards || le::get_u32(header + 16) != kSlots ||
      le::get_u64(header + kChecked) != check_of(header)) {
    return Status::corruption(path + " is not a kcache stats file");
  }
  auto mapping = (*file)->map_writable(kFileSize);
  if (!mapping) return mapping.status();
  auto stats = std::unique_ptr<StatsFile>(new StatsFile(std::move(*mapping)));
  if (auto wrong = stats->implausible()) {
    return Status::corruption(path + " holds counts no process could have made (" + *wrong +
                              "): it was damaged, or written by another program");
  }
  return stats;
}

std::optional<std::string> StatsFile::implausible() const {
  for (std::size_t i = 0; i < kStatCount; ++i) {
    std::uint64_t sum = 0;
    for (std::uint32_t shard = 0; shard < kShards; ++shard) {
      const std::uint64_t count = shard_for(shard)[i].load(std::memory_order_relaxed);
      // Each below the bound, and their sum: 32 of them cannot wrap.
      if (count >= kMostCount || (sum += count) >= kMostCount) {
        return std::string(stat_name(static_cast<Stat>(i))) + " " +
               (count >= kMostCount ? std::to_string(count) : "at least " + std::to_string(sum));
      }
    }
  }
  if (const std::int64_t zeroed = zeroed_unix(); zeroed < 0 || zeroed > kLatestUnix) {
    return "zeroed at Unix time " + std::to_string(zeroed);
  }
  return std::nullopt;
}

Result<std::unique_ptr<StatsFile>> StatsFile::open(Env& env, const std::string& path, bool create,
                                                   mode_t mode, const SetAside& set_aside) {
  auto mapped = map(env, path);
  if (mapped || !create) return mapped;
  if (mapped.status().code() != StatusCode::kNotFound &&
      mapped.status().code() != StatusCode::kCorruption) {
    return mapped;
  }
  // A lock file that is not one (locking opens it without following a
  // link, and a folder cannot be opened) would stop every process from
  // sharing its counts, without a word: moved aside as a bad file is.
  const std::string lock_path = path + ".lock";
  if (auto seen = env.file_info(lock_path); seen && seen->type != FileType::kRegular) {
    move_aside(env, lock_path, lock_path + " is " + kind_words(seen->type) + ", not a lock file",
               set_aside);
  }
  // Made under a lock: two processes that find none make one, not two
  // (the second would rename its file over the first one's counts).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::unique_ptr<FileLock> lock;
  while (true) {
    auto attempt = env.try_lock(lock_path, 0, mode);
    if (!attempt) return attempt.status();
    if (*attempt) {
      lock = std::move(*attempt);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::timeout("another process is making " + path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  mapped = map(env, path);
  if (mapped || (mapped.status().code() != StatusCode::kNotFound &&
                 mapped.status().code() != StatusCode::kCorruption)) {
    return mapped;
  }
  // Whatever is there is kept (quarantine/), never written through: a
  // folder or a FIFO could not be renamed over, a link not followed.
  if (mapped.status().code() == StatusCode::kCorruption) {
    move_aside(env, path, mapped.status().message(), set_aside);
  }
  if (Status s = env.write_file_atomic(path, new_file(env.now_unix()), /*sync=*/false, mode);
      !s.is_ok()) {
    return s;
  }
  return map(env, path);
}

std::atomic<std::uint64_t>* StatsFile::shard_for(std::uint64_t pid) const {
  // atomic_ref's guarantees for a plain std::atomic view: both are lock
  // free and of the same size and alignment here.
  static_assert(sizeof(std::atomic<std::uint64_t>) == 8 &&
                std::atomic<std::uint64_t>::is_always_lock_free);
  return reinterpret_cast<std::atomic<std::uint64_t>*>(base() + kHeaderSize +
                                                       (pid % kShards) * kShardBytes);
}

std::array<std::uint64_t, kStatCount> StatsFile::totals() const {
  std::array<std::uint64_t, kStatCount> sum{};
  for (std::uint32_t shard = 0; shard < kShards; ++shard) {
    std::atomic<std::uint64_t>* counts = shard_for(shard);
    for (std::size_t i = 0; i < kStatCount; ++i) {
      sum[i] += counts[i].load(std::memory_order_relaxed);
    }
  }
  return sum;
}

std::int64_t StatsFile::created_unix() const {
  return static_cast<std::int64_t>(le::get_u64(base() + 24));
}

std::int64_t StatsFile::zeroed_unix() const {
  return static_cast<std::int64_t>(word(base() + kZeroedAt).load(std::memory_order_relaxed));
}

void StatsFile::zero(std::int64_t now_unix) {
  for (std::uint32_t shard = 0; shard < kShards; ++shard) {
    std::atomic<std::uint64_t>* counts = shard_for(shard);
    for (std::uint32_t i = 0; i < kSlots; ++i) counts[i].store(0, std::memory_order_relaxed);
  }
  word(base() + kZeroedAt).store(static_cast<std::uint64_t>(now_unix), std::memory_order_relaxed);
}

}  // namespace kcache
