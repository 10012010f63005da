// For tests: a cache over another Env (fault injection, a fake environment).
#pragma once

#include <kcache/cache.h>

#include "env/env.h"

namespace kcache {

Result<std::unique_ptr<Cache>> open_cache_with_env(const CacheOptions& options, Env& env);

}  // namespace kcache
