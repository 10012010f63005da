// The settings table and its resolution (see include/kcache/options.h for
// the precedence). Parsers are exposed for tests.
#pragma once

#include <kcache/options.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "env/env.h"

namespace kcache {

// "1", "true", "yes", "on" (any case) -> true; "0", "false", "no", "off",
// "" -> false; anything else -> nullopt.
std::optional<bool> parse_bool(std::string_view text);
std::optional<LogLevel> parse_log_level(std::string_view text);
// parse_size, parse_count and parse_duration_ms: include/kcache/options.h.

// Non-const `env`: when the default cache folder cannot be used (HOME
// unset, not writable), the private fallback folder is created and checked
// here (README, Configuration; docs/design.md §6.5).
ResolvedConfig resolve_config(const CacheOptions& options, Env& env);

// The value of the setting `name` (a row of the table, "nvrtc_library"),
// resolved as resolve_config resolves it without a program's options:
// the environment, else the default. Malformed: the default. Creates
// nothing. Empty for a name that is no row.
std::string setting_value(std::string_view name, const Env& env);

// The version folder appended to the cache dir: the kcache version.
std::string_view version_folder();

}  // namespace kcache
