#include "store/user/use_table.h"

#include <atomic>
#include <bit>
#include <cstring>

#include "base/hash.h"
#include "format/endian.h"

namespace kcache::userlog {
namespace {

constexpr std::uint8_t kUseMagic[8] = {'K', 'C', 'U', 'U', 'S', 'E', 0, 0};
constexpr std::uint32_t kUseVersion = 1;
constexpr std::size_t kUseHeaderSize = 64;
constexpr std::size_t kUseChecked = 40;  // the check covers [0, 40)
constexpr std::size_t kRetiredAt = 48;
constexpr std::size_t kSlotSize = 16;
// A key whose slot is not found this many slots on is not recorded.
constexpr std::uint32_t kMaxProbes = 64;

// The slot tag of a key: its first 8 bytes, never 0 (an empty slot).
std::uint64_t tag_of(const CacheKey& key) {
  const std::uint64_t tag = le::get_u64(key.bytes().data());
  return tag == 0 ? 1 : tag;
}

std::uint32_t slots_for(std::size_t entries) {
  // At most half full, so that it need not grow before `entries` more.
  const std::uint64_t wanted = std::max<std::uint64_t>(UseTable::kMinSlots, entries * 2);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(std::bit_ceil(wanted), UseTable::kMaxSlots));
}

// The slots are plain bytes of a shared mapping, read and written by many
// processes at once: only ever through atomic references.
std::atomic_ref<std::uint64_t> tag_at(std::uint8_t* slot) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(slot));
}
std::atomic_ref<std::uint32_t> minute_at(std::uint8_t* slot) {
  return std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(slot + 8));
}

std::uint64_t check_of(const std::uint8_t* header) {
  const Checksum128 check = xxh3_128(std::span<const std::uint8_t>(header, kUseChecked));
  return le::get_u64(check.data());
}

// Inserts `use` into the table of `slots` slots at `base`; false when full.
bool insert(std::uint8_t* base, std::uint32_t slots, const Use& use) {
  const std::uint64_t tag = tag_of(use.key);
  for (std::uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    std::uint8_t* slot = base + kSlotSize * ((tag + probe) & (slots - 1));
    const std::uint64_t held = le::get_u64(slot);
    if (held != 0 && held != tag) continue;
    le::put_u64(slot, tag);
    le::put_u32(slot + 8, std::max(le::get_u32(slot + 8), use.minute));
    return true;
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<UseTable>> UseTable::open(std::unique_ptr<File> file,
                                                 const std::string& path) {
  auto size = file->size();
  if (!size) return size.status();
  std::uint8_t header[kUseHeaderSize];
  if (*size < kUseHeaderSize) return Status::corruption(path + " is shorter than its header");
  if (Status s = file->read_at(0, header); !s.is_ok()) return s;
  const std::uint32_t slots = le::get_u32(header + 12);
  if (std::memcmp(header, kUseMagic, sizeof kUseMagic) != 0 ||
      le::get_u32(header + 8) != kUseVersion ||
      le::get_u64(header + kUseChecked) != check_of(header)) {
    return Status::corruption(path + " is not a kcache use table");
  }
  if (!std::has_single_bit(slots) || slots < kMinSlots || slots > kMaxSlots ||
      *size < kUseHeaderSize + std::uint64_t{slots} * kSlotSize) {
    return Status::corruption(path + " has a bad slot count");
  }
  auto mapping = file->map_writable(kUseHeaderSize + std::uint64_t{slots} * kSlotSize);
  if (!mapping) return mapping.status();
  return std::unique_ptr<UseTable>(
      new UseTable(std::move(*mapping), slots, le::get_u32(header + 32)));
}

Status UseTable::write(Env& env, const std::string& path, const Generation& generation,
                       std::size_t entries, std::span<const Use> uses, std::uint32_t made,
                       mode_t mode) {
  const std::uint32_t slots = slots_for(std::max(entries, uses.size()));
  std::vector<std::uint8_t> bytes(kUseHeaderSize + std::size_t{slots} * kSlotSize, 0);
  std::memcpy(bytes.data(), kUseMagic, sizeof kUseMagic);
  le::put_u32(bytes.data() + 8, kUseVersion);
  le::put_u32(bytes.data() + 12, slots);
  std::memcpy(bytes.data() + 16, generation.data(), generation.size());
  le::put_u32(bytes.data() + 32, made);
  le::put_u64(bytes.data() + kUseChecked, check_of(bytes.data()));
  for (const Use& use : uses) {
    if (!insert(bytes.data() + kUseHeaderSize, slots, use)) break;
  }
  // Not synced: a table lost to a crash costs only eviction's accuracy.
  return env.write_file_atomic(path, bytes, /*sync=*/false, mode);
}

std::uint8_t* UseTable::slot(std::uint32_t index) const {
  return mapping_->writable_bytes().data() + kUseHeaderSize + kSlotSize * index;
}

void UseTable::touch(const CacheKey& key, std::uint32_t minute) {
  const std::uint64_t tag = tag_of(key);
  for (std::uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    std::uint8_t* at = slot((tag + probe) & (slots_ - 1));
    std::uint64_t held = tag_at(at).load(std::memory_order_relaxed);
    if (held == 0) {
      // Claim it; another process may claim it first, for this key or not.
      if (!tag_at(at).compare_exchange_strong(held, tag, std::memory_order_relaxed) &&
          held != tag) {
        continue;
      }
      held = tag;
    }
    if (held != tag) continue;
    // Minutes only grow: a process whose clock lags does not set one back.
    auto stored = minute_at(at);
    std::uint32_t seen = stored.load(std::memory_order_relaxed);
    while (seen < minute &&
           !stored.compare_exchange_weak(seen, minute, std::memory_order_relaxed)) {
    }
    return;
  }
}

std::optional<std::uint32_t> UseTable::last_use(const CacheKey& key) const {
  const std::uint64_t tag = tag_of(key);
  for (std::uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    std::uint8_t* at = slot((tag + probe) & (slots_ - 1));
    const std::uint64_t held = tag_at(at).load(std::memory_order_relaxed);
    if (held == 0) return std::nullopt;
    if (held == tag) return minute_at(at).load(std::memory_order_relaxed);
  }
  return std::nullopt;
}

bool UseTable::retired() const {
  auto flag = std::atomic_ref<std::uint32_t>(
      *reinterpret_cast<std::uint32_t*>(mapping_->writable_bytes().data() + kRetiredAt));
  return flag.load(std::memory_order_acquire) != 0;
}

void UseTable::retire() {
  auto flag = std::atomic_ref<std::uint32_t>(
      *reinterpret_cast<std::uint32_t*>(mapping_->writable_bytes().data() + kRetiredAt));
  flag.store(1, std::memory_order_release);
}

}  // namespace kcache::userlog
