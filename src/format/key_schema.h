// The version of the key schema (docs/design.md §1.1): part of every key's
// material and of a package's metadata ("key_format"), so that keys of
// another schema never match and a package of another schema is known as
// such before it is searched. Bumped by key/key_builder.cpp's changes.
#pragma once

namespace kcache {

inline constexpr int kKeySchemaVersion = 3;

}  // namespace kcache
