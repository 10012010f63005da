// A CachedKernel made from an entry a tier returned or a compile made.
#pragma once

#include <kcache/kernel.h>

#include <memory>
#include <span>
#include <string>
#include <utility>

#include "format/entry.h"

namespace kcache {

// From an entry that stays (a memory-tier hit: its storage is shared, its
// metadata copied) or one that goes (its storage and metadata are moved);
// the key material, source included, is never copied.
template <typename E>
CachedKernel kernel_from(E&& entry, TierKind tier, const Target& target, const std::string& db) {
  const std::span<const std::uint8_t> payload = entry.payload();  // before a move
  // Each member is forwarded once: moved from an rvalue, copied otherwise.
  CachedKernel kernel(std::shared_ptr<const void>(std::forward<E>(entry).storage.data), payload);
  kernel.tier = tier;
  kernel.key = entry.key;
  kernel.target = target;
  kernel.db = db;
  kernel.metadata_fields = std::forward<E>(entry).metadata;
  return kernel;
}

}  // namespace kcache
