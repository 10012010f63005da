#include "env/random.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace kcache {

bool random_bytes(std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::uint64_t random_u64() {
  std::uint8_t bytes[8];
  std::uint64_t value = 0;
  if (random_bytes(bytes)) {
    std::memcpy(&value, bytes, sizeof value);
    return value;
  }
  static std::atomic<std::uint64_t> counter{0};
  value = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  value ^= static_cast<std::uint64_t>(::getpid()) << 40;
  value ^= reinterpret_cast<std::uintptr_t>(&value);
  value ^= counter.fetch_add(1) * 0x9E3779B97F4A7C15ULL;
  return value;
}

}  // namespace kcache
