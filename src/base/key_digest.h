// How key material becomes a key: the two facts that the value types of
// include/kcache/key.h (base/key.cpp) and the key builder
// (key/key_builder.h) must agree on.
#pragma once

#include <kcache/key.h>

#include <string_view>

namespace kcache {

// The last field of key material: the whole source, written raw
// (append_raw_field).
inline constexpr std::string_view kSourceField = "source";

// The key of serialized key material: its XXH3-128.
CacheKey key_of_material(std::string_view material);

}  // namespace kcache
