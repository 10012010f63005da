#include "store/memory/memory_tier.h"
#include "base/mutex.h"

#include <list>
#include <unordered_map>

namespace kcache {
namespace {

class MemoryTier final : public Tier {
 public:
  explicit MemoryTier(std::uint64_t capacity) : capacity_(capacity) {}

  std::string_view name() const override { return "memory"; }

  Result<std::optional<Entry>> get(const DbNames& /*db*/, const CacheKey& key) override {
    MutexLock lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::optional<Entry>();
    lru_.splice(lru_.begin(), lru_, it->second);
    return std::optional<Entry>(it->second->entry);
  }

  Status put(const std::string& /*db*/, const Entry& entry,
             std::span<const std::uint8_t> /*encoded*/) override {
    const std::uint64_t cost = charge(entry);
    if (cost > capacity_) return Status::ok();  // too large to keep; not an error
    MutexLock lock(mutex_);
    if (auto it = map_.find(entry.key); it != map_.end()) {
      used_ -= charge(it->second->entry);
      lru_.erase(it->second);
      map_.erase(it);
    }
    lru_.push_front({entry.key, entry});
    map_[entry.key] = lru_.begin();
    used_ += cost;
    while (used_ > capacity_ && !lru_.empty()) {
      used_ -= charge(lru_.back().entry);
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
    return Status::ok();
  }

  Status remove(const std::string& /*db*/, const CacheKey& key) override {
    MutexLock lock(mutex_);
    if (auto it = map_.find(key); it != map_.end()) {
      used_ -= charge(it->second->entry);
      lru_.erase(it->second);
      map_.erase(it);
    }
    return Status::ok();
  }

  Result<std::uint64_t> clear() override {
    MutexLock lock(mutex_);
    std::uint64_t removed = map_.size();
    map_.clear();
    lru_.clear();
    used_ = 0;
    return removed;
  }

 private:
  struct Slot {
    CacheKey key;
    Entry entry;
  };
  // What an entry holds in memory: its buffer (a whole pooled block) and
  // its material, unless that lies in the same buffer (an entry read from
  // disk uncompressed).
  static std::uint64_t charge(const Entry& entry) {
    const bool shared = entry.material.inside(entry.storage.data);
    return entry.storage.footprint() + (shared ? 0 : entry.material.size()) + 256;
  }

  const std::uint64_t capacity_;
  Mutex mutex_;
  std::list<Slot> lru_ GUARDED_BY(mutex_);
  std::unordered_map<CacheKey, std::list<Slot>::iterator> map_ GUARDED_BY(mutex_);
  std::uint64_t used_ GUARDED_BY(mutex_) = 0;
};

}  // namespace

std::unique_ptr<Tier> make_memory_tier(std::uint64_t capacity_bytes) {
  return std::make_unique<MemoryTier>(capacity_bytes);
}

}  // namespace kcache
