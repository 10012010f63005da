// kcache: options and resolved configuration.
//
// Every setting kcache reads is one row of a single table
// (src/core/config.cpp): name, type, default, environment variable,
// documentation. The README's configuration table is written by hand and
// checked against the rows by a test. A value comes from, in order of
// precedence:
//   1. the `CacheOptions` field set by the program (origin "option"); for
//      nvrtc_library and hip_library, the `CompilerConfig` field
//      (compiler.h) of the compiler it makes,
//   2. the environment variable (origin "env KCACHE_..."),
//   3. the build (origin "build", for values fixed by CMake),
//   4. the built-in default (origin "default").
// `kcache info` prints every setting with its value and origin.
#pragma once

#include <kcache/export.h>
#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache {

enum class LogLevel { kQuiet = 0, kError, kWarning, kInfo, kDebug };

// "quiet", "error", "warning", "info", "debug".
KCACHE_EXPORT std::string_view log_level_name(LogLevel level);

// Receives each message kcache would print, already formatted as one line
// ("kcache: Warning [UserDb] ..."), without the newline. Called from any
// thread that uses the cache; must be thread-safe and must not call back
// into kcache.
using LogSink = std::function<void(LogLevel level, std::string_view line)>;

// Overrides for the settings table; an empty optional means "not set here".
struct KCACHE_EXPORT CacheOptions {
  // Replaces the user cache dir (KCACHE_CUSTOM_CACHE_DIR); the version folder
  // is still appended. A leading "~/" is the home directory.
  std::optional<std::string> cache_dir{};
  // Replaces the folder of installed .kdb files (KCACHE_SYSTEM_DB_PATH).
  std::optional<std::string> system_db_path{};
  // Turns all disk reads and writes off (KCACHE_DISABLE_CACHE).
  std::optional<bool> disable_cache{};
  // KCACHE_LOG_LEVEL.
  std::optional<LogLevel> log_level{};
  // Bytes held in this process's memory tier (KCACHE_MEMORY_CACHE_SIZE); 0
  // turns the memory tier off.
  std::optional<std::uint64_t> memory_cache_size{};
  // "none" or "zstd" for new user-tier entries (KCACHE_COMPRESSION).
  std::optional<std::string> compression{};
  // Bytes the user tier may take on disk (KCACHE_MAX_SIZE), entries it may
  // hold (KCACHE_MAX_ENTRIES), and how long an unused entry is kept
  // (KCACHE_MAX_AGE); 0: no limit. Past one, the entries used longest ago
  // are evicted in the background (docs/design.md §3.9).
  std::optional<std::uint64_t> max_size{};
  std::optional<std::uint64_t> max_entries{};
  std::optional<std::chrono::seconds> max_age{};
  // How long to wait for another process compiling the same kernel before
  // compiling it here (KCACHE_LOCK_TIMEOUT).
  std::optional<std::chrono::milliseconds> lock_timeout{};
  // How long a compile error is remembered (KCACHE_FAILURE_TTL); zero
  // turns the negative cache off.
  std::optional<std::chrono::milliseconds> failure_ttl{};
  // A manifest every requested kernel is added to, once (KCACHE_RECORD;
  // docs/formats.md); an empty string records nothing.
  std::optional<std::string> record_path{};
  // Public keys system packages must be signed with (KCACHE_TRUSTED_KEYS):
  // .pub files or folders of them, separated by ':'; empty: none.
  std::optional<std::string> trusted_keys{};
  // False: user-tier entries are not flushed one by one (KCACHE_SYNC); a
  // crash may lose recent entries, never corrupt one.
  std::optional<bool> sync{};
  // True: the user cache folder is shared on purpose (KCACHE_SHARED_CACHE),
  // and used even when other users can write it; false: such a folder is
  // refused with one warning.
  std::optional<bool> shared_cache{};
  // When false, KCACHE_* environment variables are ignored.
  bool read_environment = true;
  // Where messages go; stderr when empty.
  LogSink log_sink{};
};

// One resolved setting, as `kcache info` shows it.
struct KCACHE_EXPORT Setting {
  std::string name{};     // "cache_dir"
  std::string value{};    // "/home/a/.cache/kcache"
  std::string origin{};   // "default", "build", "option", "env KCACHE_CUSTOM_CACHE_DIR"
  std::string env_var{};  // "KCACHE_CUSTOM_CACHE_DIR", or empty
  std::string doc{};      // one line
};

// The configuration a cache runs with: every setting plus what follows
// from them.
struct KCACHE_EXPORT ResolvedConfig {
  std::vector<Setting> settings{};
  bool enabled = true;
  // Why the cache is off ("KCACHE_DISABLE_CACHE=1", "built with
  // KCACHE_BUILD_DEV=ON", ...); empty when enabled.
  std::string disabled_reason{};
  // <cache dir>/<kcache version>; empty when disabled or unresolvable.
  std::string user_dir{};
  // The folder of .kdb files; empty when disabled.
  std::string system_db_path{};
  LogLevel log_level = LogLevel::kWarning;
  std::uint64_t memory_cache_size = 0;
  std::string compression = "none";
  // The user tier's limits; 0: none.
  std::uint64_t max_size = 0;
  std::uint64_t max_entries = 0;
  std::chrono::seconds max_age{0};
  std::chrono::milliseconds lock_timeout{120'000};
  std::chrono::milliseconds failure_ttl{3'600'000};
  // The manifest requests are recorded in (KCACHE_RECORD); empty: none.
  std::string record_path{};
  // The trusted_keys setting, one path each; when there are any, the system
  // tier uses only packages signed by one of their keys.
  std::vector<std::string> trusted_keys{};
  // Whether each user-tier entry is flushed (fdatasync) before it counts.
  bool sync = true;
  // Whether the user cache folder is shared on purpose (KCACHE_SHARED_CACHE).
  bool shared_cache = false;
  // Problems met while resolving (a malformed value, HOME unset), as
  // messages; they are also logged once when a cache opens.
  std::vector<std::string> warnings{};

  // The setting of that name, or nullptr.
  [[nodiscard]] const Setting* find(std::string_view name) const;
};

// Resolves `options` against the environment and the build. Writes nothing
// to the disk, with one exception: when the default user cache folder
// cannot be used (HOME unset, or the folder cannot be created), the private
// per-user fallback folder ${TMPDIR:-/tmp}/kcache-<uid> is created (0700)
// and checked; the cache_dir setting's origin then reads "fallback (...)".
// Never fails: malformed values fall back to the default and are reported
// in `warnings`.
KCACHE_EXPORT ResolvedConfig resolve_config(const CacheOptions& options);

// The forms settings take, for tools that accept the same on their command
// line. "1048576", "64K", "64M", "2G", "1.5G" (binary units; "KiB"/"MB"
// spellings too) -> bytes; nullopt when malformed or negative.
KCACHE_EXPORT std::optional<std::uint64_t> parse_size(std::string_view text);
// "100000" -> 100000; nullopt unless a whole number of up to 15 digits.
KCACHE_EXPORT std::optional<std::uint64_t> parse_count(std::string_view text);
// "120" (seconds), "90s", "500ms", "2m", "1h", "30d", "2w" -> milliseconds;
// nullopt when malformed or past 31 years.
KCACHE_EXPORT std::optional<std::uint64_t> parse_duration_ms(std::string_view text);

}  // namespace kcache
