// The cache a drop-in layer serves from (the OpenCL layer, the NVRTC shim),
// opened the same way by each: quiet unless KCACHE_LOG_LEVEL asks (under a
// program that never heard of kcache, its warnings, such as the missing
// package, would be noise on that program's stderr; errors are still
// said), one warning when it cannot be opened, one info line saying the
// layer is active. The layers' messages are all of the area "Layer"
// ("kcache: Warning [Layer] text", as the library's own).
#pragma once

#include <kcache/cache.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/setting_variables.h"

namespace kcache::layer {

// The cache, or nullptr when the layer serves nothing (it cannot be opened,
// or it is disabled and records nothing). `name` is the layer's ("OpenCL
// layer"), `serves` what its info line says it serves.
inline std::unique_ptr<Cache> open_layer_cache(const char* name, const std::string& serves) {
  CacheOptions options;
  if (std::getenv(kLogLevelVariable) == nullptr) options.log_level = LogLevel::kError;
  auto cache = Cache::open(options);
  if (!cache) {
    std::fprintf(stderr, "kcache: Warning [Layer] the %s is off: the cache cannot be opened (%s)\n",
                 name, cache.status().message().c_str());
    return nullptr;
  }
  const ResolvedConfig& config = (*cache)->config();
  // Off with the cache, unless it records (KCACHE_RECORD): a recording
  // with the cache off compiles each request and writes its line.
  if (!config.enabled && config.record_path.empty()) return nullptr;
  if (config.log_level >= LogLevel::kInfo) {
    std::fprintf(
        stderr,
        "kcache: Info [Layer] %s active: %s from %s (KCACHE_LAYER_DISABLE=1 turns it off)\n", name,
        serves.c_str(), config.user_dir.c_str());
  }
  return std::move(*cache);
}

// Says once per reason, at info level, why the layer left a compile to the
// real library (`real`: "NVRTC", "the OpenCL platform"): the request could
// not be keyed or the cache failed. The program sees the real call's
// result either way.
inline void say_left_to_real(const Cache& cache, const char* real, const std::string& why) {
  if (cache.config().log_level < LogLevel::kInfo) return;
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.size() > 64 || !said.insert(why).second) return;
  std::fprintf(stderr, "kcache: Info [Layer] compiled by %s itself, not cached: %s\n", real,
               why.c_str());
}

}  // namespace kcache::layer
