// The text form of named fields used by key material and entry metadata:
// one "name value" line per field. Names are non-empty and hold no space,
// tab, newline or backslash; in values '\\', '\n' and '\r' are escaped.
// The form is canonical: equal field lists give equal bytes.
#pragma once

#include <kcache/status.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

using Fields = std::vector<std::pair<std::string, std::string>>;

bool is_valid_field_name(std::string_view name);
// Appends one encoded line to `out`. `name` must be valid.
void append_field(std::string& out, std::string_view name, std::string_view value);
std::string encode_fields(const Fields& fields);
Result<Fields> decode_fields(std::string_view text);

}  // namespace kcache
