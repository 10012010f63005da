// Whether a package can serve a compiler's requests at all, from what its
// metadata says (docs/formats.md §2): packed for this database, with this
// key and entry format, by this compiler. A key holds all of that too, so
// an unfit package could never serve a hit: the check is there to say so
// once, clearly, instead of a silent miss on every request.
#pragma once

#include <kcache/compiler.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/field_text.h"

namespace kcache {

// "<backend> | <id> | <version>", as a package's "compiler" lines name it.
std::string identity_text(const CompilerIdentity& compiler);

// Why a package with `metadata`, found as database `db`, cannot serve
// `compiler` (in words for a warning); nullopt when it can, or when its
// metadata does not say (packages older than these fields). An identity
// with no backend checks the database and the formats only.
std::optional<std::string> unfit_reason(const Fields& metadata, std::string_view db,
                                        const CompilerIdentity& compiler);

}  // namespace kcache
