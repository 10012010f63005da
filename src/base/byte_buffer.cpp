#include "base/byte_buffer.h"
#include "base/mutex.h"

#include <array>
#include <bit>
#include <ostream>
#include <vector>

// Under ASan (gcc says so with __SANITIZE_ADDRESS__, clang with
// __has_feature), a free block in the pool is poisoned whole, and a block in
// use beyond the buffer's size, so that a read past a buffer's end or of a
// buffer already released is still reported.
#if defined(__SANITIZE_ADDRESS__)
#define KCACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KCACHE_ASAN 1
#endif
#endif
#if defined(KCACHE_ASAN)
#include <sanitizer/asan_interface.h>
#define KCACHE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define KCACHE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define KCACHE_POISON(p, n) ((void)(p), (void)(n))
#define KCACHE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace kcache {
namespace {

constexpr std::size_t kPooledMin = 4 * 1024;
constexpr int kClasses = 15;  // 4 KiB .. 64 MiB, powers of two
constexpr std::size_t kKeptPerClass = 4;
constexpr std::size_t kKeptBytes = 64u << 20;

// Free buffers, by size class. Never destroyed: buffers may be
// released by static destructors of other objects at exit.
class BufferPool {
 public:
  std::uint8_t* take(int size_class) {
    MutexLock lock(mutex_);
    auto& free = free_[size_class];
    if (free.empty()) return nullptr;
    std::uint8_t* buffer = free.back();
    free.pop_back();
    kept_bytes_ -= class_bytes(size_class);
    return buffer;
  }
  void give_back(int size_class, std::uint8_t* buffer) {
    {
      MutexLock lock(mutex_);
      auto& free = free_[size_class];
      if (free.size() < kKeptPerClass && kept_bytes_ + class_bytes(size_class) <= kKeptBytes) {
        KCACHE_POISON(buffer, class_bytes(size_class));
        free.push_back(buffer);
        kept_bytes_ += class_bytes(size_class);
        return;
      }
    }
    KCACHE_UNPOISON(buffer, class_bytes(size_class));
    delete[] buffer;
  }
  static std::size_t class_bytes(int size_class) { return kPooledMin << size_class; }

 private:
  Mutex mutex_;
  std::array<std::vector<std::uint8_t*>, kClasses> free_ GUARDED_BY(mutex_);
  std::size_t kept_bytes_ GUARDED_BY(mutex_) = 0;
};

BufferPool& pool() {
  static BufferPool* instance = new BufferPool();
  return *instance;
}

}  // namespace

ByteBuffer ByteBuffer::allocate(std::size_t n) {
  if (n < kPooledMin || n > BufferPool::class_bytes(kClasses - 1)) {
    return {std::make_shared_for_overwrite<std::uint8_t[]>(n == 0 ? 1 : n), n, n};
  }
  const int size_class = std::bit_width((n - 1) / kPooledMin);
  const std::size_t block = BufferPool::class_bytes(size_class);
  std::uint8_t* buffer = pool().take(size_class);
  if (buffer == nullptr) buffer = new std::uint8_t[block];
  KCACHE_UNPOISON(buffer, block);
  KCACHE_POISON(buffer + n, block - n);
  return {std::shared_ptr<std::uint8_t[]>(
              buffer, [size_class](std::uint8_t* p) { pool().give_back(size_class, p); }),
          n, block};
}

std::ostream& operator<<(std::ostream& out, const SharedText& text) { return out << text.view(); }

}  // namespace kcache
