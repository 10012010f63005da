// The monotonic clock to a tick (a few ms, CLOCK_MONOTONIC_COARSE): enough
// for a recheck once a second on a lookup's way, at a fraction of the cost
// of the precise clock (the scan memo's stat-again time, the system tier's
// look at its packages' files).
#pragma once

#include <time.h>

#include <cstdint>

namespace kcache {

inline std::int64_t coarse_now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace kcache
