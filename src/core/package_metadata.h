// The metadata a package is written with (docs/formats.md §2), one place
// for `export` and `merge`.
#pragma once

#include <kcache/package.h>  // valid_db_name

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "base/field_text.h"

namespace kcache {

// producer, db, created, key_format, entry_format, then one "compiler"
// per identity in `compilers`.
Fields package_metadata(const std::string& db, const std::set<std::string>& compilers,
                        std::int64_t created_unix);

// "<backend> | <id> | <version>" as an entry's key material names its
// compiler; empty when the material does not parse.
std::string compiler_of_material(std::string_view material);

}  // namespace kcache
