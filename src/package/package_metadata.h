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
// per identity in `compilers` and one "features" per target features in
// `features` ("xnack-": the db names the arch, not its features).
Fields package_metadata(const std::string& db, const std::set<std::string>& compilers,
                        const std::set<std::string>& features, std::int64_t created_unix);

// "<backend> | <id> | <version>" as an entry's key material names its
// compiler; empty when the material does not parse.
std::string compiler_of_material(std::string_view material);

// The target features an entry's key material names; empty when none (or
// it does not parse).
std::string features_of_material(std::string_view material);

}  // namespace kcache
