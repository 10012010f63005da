// The memory tier: this process's most recently used entries, bounded in
// bytes (least recently used out first). Hits share the entry's buffer.
#pragma once

#include <cstdint>
#include <memory>

#include "store/tier.h"

namespace kcache {

std::unique_ptr<Tier> make_memory_tier(std::uint64_t capacity_bytes);

}  // namespace kcache
