// The settings table and its resolution (see include/kcache/options.h for
// the precedence). Parsers are exposed for tests.
#pragma once

#include <kcache/options.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "env/env.h"

namespace kcache {

// "1", "true", "yes", "on" (any case) -> true; "0", "false", "no", "off",
// "" -> false; anything else -> nullopt.
std::optional<bool> parse_bool(std::string_view text);
std::optional<LogLevel> parse_log_level(std::string_view text);
// "1048576", "64K", "64M", "2G", "1.5G" (binary units; "KiB"/"MB" spellings
// too) -> bytes; nullopt when malformed.
std::optional<std::uint64_t> parse_size(std::string_view text);
// "120" (seconds), "90s", "500ms", "2m", "1h" -> milliseconds; nullopt when
// malformed.
std::optional<std::uint64_t> parse_duration_ms(std::string_view text);

// Non-const `env`: when the default cache folder cannot be used (HOME
// unset, not writable), the private fallback folder is created and checked
// here (README, Configuration; docs/design.md §6).
ResolvedConfig resolve_config(const CacheOptions& options, Env& env);

// The version folder appended to the cache dir: the kcache version.
std::string_view version_folder();

}  // namespace kcache
