// The text form of named fields used by key material and entry metadata:
// one "name value" line per field. Names are non-empty and hold no space,
// tab, newline or backslash; in values '\\', '\n' and '\r' are escaped.
// The form is canonical: equal field lists give equal bytes.
#pragma once

#include <kcache/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

using Fields = std::vector<std::pair<std::string, std::string>>;

bool is_valid_field_name(std::string_view name);
// Appends one encoded line to `out`. `name` must be valid.
void append_field(std::string& out, std::string_view name, std::string_view value);
// Appends "<name> <value size>\n" and then `value` as is: a field whose
// value is long or binary (the source in key material). Only the last field
// of a text may be written so.
void append_raw_field(std::string& out, std::string_view name, std::string_view value);
// Appends the line of such a field alone ("<name> <size>\n"): its `size`
// bytes are to follow.
void append_raw_field_line(std::string& out, std::string_view name, std::size_t size);
// The decimal number `text` in canonical form (digits, no leading zero, no
// sign); nullopt otherwise.
std::optional<std::uint64_t> parse_decimal(std::string_view text);
std::string encode_fields(const Fields& fields);
Result<Fields> decode_fields(std::string_view text);

}  // namespace kcache
