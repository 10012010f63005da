// What a PreparedRequest (kcache/advanced.h) holds: the request's resolved
// target and, when kcache can key it, its key text.
#pragma once

#include <kcache/advanced.h>

#include <optional>

#include "key/key_text.h"

namespace kcache {

struct PreparedRequest::State {
  const Cache::Impl* cache = nullptr;
  const Compiler* compiler = nullptr;
  const KernelRequest* request = nullptr;
  Target target;
  std::optional<KeyText> text{};  // nullopt: not keyed (`unkeyed` says why)
  CacheKey key{};
  Status unkeyed{};
};

}  // namespace kcache
