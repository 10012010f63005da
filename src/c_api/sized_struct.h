// Reading a size-prefixed struct of the C API (c_api.h says the rule): the
// fields the caller's size covers are its, the rest are zero, which every
// field takes for its default. A size must cover the struct's required
// fields and end where a field ends; a size past the last field known here
// is a newer caller's, whose newer fields are ignored.
#pragma once

#include <kcache/status.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>

namespace kcache::c_api {

// Where a field of a C struct ends.
#define KCACHE_C_FIELD_END(Struct, field) (offsetof(Struct, field) + sizeof(Struct::field))

// `Struct`'s layout as the library knows it: the end of each field, in
// order, and how many of them are required.
template <class Struct, std::size_t N>
struct SizedLayout {
  const char* name;
  std::array<std::size_t, N> field_ends;
  std::size_t required_fields;  // counting `size`
};

// True when the layout has no padding anywhere and no trailing padding:
// every field 8 bytes, so no later field can fall into a gap an older
// version left (c_api.h's rule).
template <class Struct, std::size_t N>
constexpr bool packed_in_eights(const SizedLayout<Struct, N>& layout) {
  for (std::size_t i = 0; i < N; ++i) {
    if (layout.field_ends[i] != 8 * (i + 1)) return false;
  }
  return sizeof(Struct) == 8 * N;
}

// The caller's struct with the fields its size does not cover zeroed.
// `in` must not be NULL.
template <class Struct, std::size_t N>
Result<Struct> read_sized(const Struct* in, const SizedLayout<Struct, N>& layout) {
  Struct copy{};
  const std::size_t size = in->size;
  if (size >= sizeof(Struct)) {
    std::memcpy(static_cast<void*>(&copy), in, sizeof(Struct));
    copy.size = sizeof(Struct);
    return copy;
  }
  const std::size_t required = layout.field_ends[layout.required_fields - 1];
  const bool at_a_field_end = std::find(layout.field_ends.begin(), layout.field_ends.end(), size) !=
                              layout.field_ends.end();
  if (size < required || !at_a_field_end) {
    return Status::invalid_argument(std::string(layout.name) + ".size is " + std::to_string(size) +
                                    ", which is the size of no version of it (set it to sizeof(" +
                                    layout.name + "), " + std::to_string(sizeof(Struct)) +
                                    " for this library; at least " + std::to_string(required) +
                                    ")");
  }
  std::memcpy(static_cast<void*>(&copy), in, size);
  return copy;
}

}  // namespace kcache::c_api
