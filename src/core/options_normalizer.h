// Compiler options as the key sees them.
#pragma once

#include <kcache/status.h>

#include <string>
#include <string_view>
#include <vector>

namespace kcache {

// Splits like a POSIX shell would (whitespace, '...' and "..." quoting,
// backslash escapes), without expansion. kInvalidArgument on an unterminated
// quote or a trailing backslash.
Result<std::vector<std::string>> split_options(std::string_view options);

// The canonical form of split options: separated "-D X", "-U X", "-I X" and
// "--include-path X" are joined; the -D/-U set is sorted by text when no
// macro name appears twice (then order cannot matter) and placed after the
// other options, which keep their order (include order matters).
std::vector<std::string> normalize_options(std::vector<std::string> tokens);

// The include directories named by -I/--include-path in normalized tokens.
std::vector<std::string> include_dirs_in(const std::vector<std::string>& normalized);

}  // namespace kcache
