// The one table of settings. Every setting kcache reads is a row here, and
// `kcache info` shows each row; the README's configuration table is written
// by hand and checked against the rows (tests/core/config_test.cpp). A
// backend gets its rows' values from make_compiler; only the drop-in layers
// read their variables themselves, through the constants of
// base/setting_variables.h, as they run in other programs' processes.
#include "core/config.h"

#include <kcache/version.h>

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/setting_variables.h"
#include "build_config.h"
#include "format/compression.h"

namespace kcache {
namespace {

// kText: any value, taken as it is (a soname, a switch read by its own rule).
enum class SettingType { kPath, kText, kBool, kLogLevel, kSize, kCount, kCompression, kDuration };

struct SettingRow {
  std::string_view name;
  SettingType type;
  std::string_view env_var;
  std::string_view default_value;  // empty: computed (see default_for)
  std::string_view expected;       // the accepted values, for messages
  std::string_view doc;
};

constexpr SettingRow kSettingsTable[] = {
    {"cache_dir", SettingType::kPath, "KCACHE_CUSTOM_CACHE_DIR", "", "a path",
     "user cache dir; the version folder is appended (build default: KCACHE_CACHE_DIR, "
     "XDG_CACHE_HOME honoured)"},
    {"disable_cache", SettingType::kBool, "KCACHE_DISABLE_CACHE", "false",
     "1/true/yes/on or 0/false/no/off",
     "1/true/yes/on (any case): nothing is read from or written to disk; every request compiles"},
    {"system_db_path", SettingType::kPath, "KCACHE_SYSTEM_DB_PATH", "", "a path",
     "folder of installed read-only .kdb files (default: <prefix>/share/kcache/db beside the "
     "library)"},
    {"log_level", SettingType::kLogLevel, kLogLevelVariable, "warning",
     "quiet, error, warning, info or debug", "quiet, error, warning, info or debug"},
    {"memory_cache_size", SettingType::kSize, "KCACHE_MEMORY_CACHE_SIZE", "64M",
     "a size such as 1048576, 64K, 64M or 2G",
     "bytes of binaries kept in this process's memory tier (K/M/G suffixes); 0 turns it off"},
    {"max_size", SettingType::kSize, "KCACHE_MAX_SIZE", "4G",
     "a size such as 4G, 500M or 0 (no limit)",
     "bytes the user cache may take on disk (K/M/G/T suffixes, binary); past it, the entries "
     "used longest ago are evicted down to 90%, in the background; 0: no limit"},
    {"max_entries", SettingType::kCount, "KCACHE_MAX_ENTRIES", "0",
     "a whole number such as 100000, or 0 (no limit)",
     "entries the user cache may hold; past it, the entries used longest ago are evicted down "
     "to 90%; 0: no limit"},
    {"max_age", SettingType::kDuration, "KCACHE_MAX_AGE", "0",
     "a duration such as 30d, 12h or 0 (no limit)",
     "entries not used for this long (s/m/h/d/w suffixes) are evicted; 0: kept however old"},
    {"lock_timeout", SettingType::kDuration, "KCACHE_LOCK_TIMEOUT", "120s",
     "a duration such as 120, 90s, 500ms or 2m",
     "how long a process waits for another one compiling the same kernel before compiling it "
     "itself"},
    {"failure_ttl", SettingType::kDuration, "KCACHE_FAILURE_TTL", "1h",
     "a duration such as 1h, 30m or 0",
     "how long a compile error is remembered, so the same failing kernel is not recompiled on "
     "every start; 0 turns this off"},
    {"compression", SettingType::kCompression, "KCACHE_COMPRESSION", "none",
     "none or zstd (if built in)", "none or zstd, for new user-tier entries (none loads fastest)"},
    {"record", SettingType::kPath, "KCACHE_RECORD", "", "a file path",
     "a manifest (JSON lines) that every kernel the program asks for is added to, once, for "
     "`kcache pack`; empty: nothing is recorded"},
    {"record_shared", SettingType::kBool, "KCACHE_RECORD_SHARED", "false",
     "1/true/yes/on or 0/false/no/off",
     "true: the manifest is shared on purpose (a team's file): added to even when another user "
     "could have written or could replace it, and made for all to read and write as the umask "
     "allows; false: such a manifest is refused, and a new one is readable by its owner alone"},
    {"sync", SettingType::kBool, "KCACHE_SYNC", "true", "1/true/yes/on or 0/false/no/off",
     "false: new user-tier entries are not flushed to disk one by one (faster writes on a slow "
     "disk; a crash may lose recent entries, never corrupt one)"},
    {"shared_cache", SettingType::kBool, "KCACHE_SHARED_CACHE", "false",
     "1/true/yes/on or 0/false/no/off",
     "true: the user cache folder is shared on purpose (a team's folder, say): it is used even "
     "when other users can write it, and files are made for all to read and write as the umask "
     "allows (use umask 002 and a setgid group folder); false: such a folder is refused"},
    {"trusted_keys", SettingType::kPath, "KCACHE_TRUSTED_KEYS", "",
     "public key files or folders, separated by ':'",
     "public keys (`kcache keygen`'s .pub files, or folders of them, separated by ':') that "
     "system packages must be signed with; empty: a package is trusted as far as its file"},
    {"nvrtc_library", SettingType::kText, kNvrtcLibraryVariable, "", "a path or soname",
     "the libnvrtc the nvrtc backend loads, the only one tried (a program's "
     "CompilerConfig::nvrtc_library comes first); a path also names the real library behind "
     "the NVRTC shim; empty: searched (the loader's path, $CUDA_HOME, $CUDA_PATH, "
     "/usr/local/cuda)"},
    {"hip_library", SettingType::kText, kHipLibraryVariable, "", "a path or soname",
     "the libamdhip64 (hipRTC) the hip backend loads, the only one tried (a program's "
     "CompilerConfig::hip_library comes first); empty: searched (the loader's path, $ROCM_PATH, "
     "$HIP_PATH, /opt/rocm)"},
    {"hip_worker", SettingType::kPath, kHipWorkerVariable, "", "a path",
     "the hip backend's helper program, the only one tried; empty: the kcache-hip-worker "
     "installed with the library (or, run from the build tree, the one built there)"},
    {"layer_disable", SettingType::kText, kLayerDisableVariable, "", "any text",
     "anything but empty or 0: the drop-in layers serve nothing (every call is the real one) "
     "and `kcache run` preloads none; read by the layers in the program's environment"},
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

// The folder of the library (or program) this code is linked into.
std::string library_dir() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  auto path = std::filesystem::canonical(info.dli_fname, error);
  if (error) return {};
  return path.parent_path().string();
}

std::string default_system_db_path() {
  std::string dir = library_dir();
  if (dir.empty()) return {};
  return std::filesystem::path(dir + "/" + KCACHE_SYSTEM_DB_RELATIVE).lexically_normal().string();
}

bool valid_value(SettingType type, std::string_view text) {
  switch (type) {
    case SettingType::kPath:
    case SettingType::kText:
      return true;
    case SettingType::kBool:
      return parse_bool(text).has_value();
    case SettingType::kLogLevel:
      return parse_log_level(text).has_value();
    case SettingType::kSize:
      return parse_size(text).has_value();
    case SettingType::kCount:
      return parse_count(text).has_value();
    case SettingType::kDuration:
      return parse_duration_ms(text).has_value();
    case SettingType::kCompression: {
      auto compression = parse_compression(lower(trim(text)));
      return compression && compression_available(*compression);
    }
  }
  return false;
}

// Expands a leading "~" or "~/" to the home folder and makes the path
// absolute. nullopt when it needs a home folder and there is none.
std::optional<std::string> expand_path(const std::string& path, const Env& env) {
  std::string expanded = path;
  if (path == "~" || path.starts_with("~/")) {
    auto home = env.home_dir();
    if (!home) return std::nullopt;
    expanded = *home + path.substr(1);
  }
  std::error_code error;
  auto absolute = std::filesystem::absolute(expanded, error);
  if (error) return expanded;
  return absolute.lexically_normal().string();
}

std::string strip_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// The per-user folder used when the default cache folder cannot be:
// ${TMPDIR:-/tmp}/kcache-<uid>. Never a folder shared by users.
std::string fallback_root(const Env& env) {
  std::string base = "/tmp";
  if (auto tmp = env.get_env("TMPDIR"); tmp && tmp->starts_with("/")) {
    base = strip_trailing_slash(*tmp);
  }
  return (base == "/" ? "" : base) + "/kcache-" + std::to_string(env.user_id());
}

// Creates `dir` (0700) unless it exists, then accepts it only if lstat
// shows a folder, not a symbolic link, owned by this user, of mode 0700.
// Anyone may create names in /tmp: a folder made there by someone else
// could hand this process their binaries, so it is refused, never used or
// "fixed". Done here, not on the first write, so that no one can create it
// between this check and its first use (/tmp is sticky: once it is ours,
// no one else can move it).
Status claim_private_dir(Env& env, const std::string& dir) {
  if (Status s = env.create_dirs(dir, 0700); !s.is_ok()) return s;
  auto info = env.file_info(dir);
  if (!info) return info.status();
  if (info->type == FileType::kSymlink) return Status::io_error(dir + " is a symbolic link");
  if (info->type != FileType::kDirectory) return Status::io_error(dir + " is not a directory");
  if (info->owner != env.user_id()) {
    return Status::io_error(dir + " belongs to uid " + std::to_string(info->owner) +
                            ", not to this user (uid " + std::to_string(env.user_id()) + ")");
  }
  if ((info->mode & 07777) != 0700) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info->mode & 07777));
    return Status::io_error(dir + " has mode " + mode + ", not 0700");
  }
  return Status::ok();
}

// Points the user cache at the private fallback folder, or at nothing when
// that folder is refused; one warning either way. `why` says what was
// wrong with the default folder; `origin` is the short form for the
// setting's origin.
void use_fallback(ResolvedConfig& config, Env& env, const std::string& why,
                  const std::string& origin) {
  const std::string root = fallback_root(env);
  Setting* setting = nullptr;
  for (auto& s : config.settings) {
    if (s.name == "cache_dir") setting = &s;
  }
  if (Status claimed = claim_private_dir(env, root); claimed.is_ok()) {
    config.user_dir = root + "/" + std::string(version_folder());
    setting->value = root;
    setting->origin = "fallback (" + origin + ")";
    config.warnings.push_back(why + "; kernels are kept in the private fallback folder " + root +
                              " instead (set KCACHE_CUSTOM_CACHE_DIR to choose the folder)");
  } else {
    config.user_dir.clear();
    config.warnings.push_back(why + ", and the fallback folder is refused (" + claimed.message() +
                              "); kernels will not be kept in the user cache (set "
                              "KCACHE_CUSTOM_CACHE_DIR)");
  }
}

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  std::string value = lower(trim(text));
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value.empty() || value == "0" || value == "false" || value == "no" || value == "off") {
    return false;
  }
  return std::nullopt;
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
  std::string value = lower(trim(text));
  if (value == "quiet" || value == "none" || value == "off") return LogLevel::kQuiet;
  if (value == "error") return LogLevel::kError;
  if (value == "warning" || value == "warn") return LogLevel::kWarning;
  if (value == "info") return LogLevel::kInfo;
  if (value == "debug") return LogLevel::kDebug;
  return std::nullopt;
}

namespace {

// "1.5G" -> {1.5, "g"}: a non-negative decimal number and the (lower-case)
// unit after it; nullopt when there is no number.
std::optional<std::pair<double, std::string>> number_and_unit(std::string_view text) {
  std::string value = lower(trim(text));
  std::size_t digits_end = 0;
  while (
      digits_end < value.size() &&
      (std::isdigit(static_cast<unsigned char>(value[digits_end])) || value[digits_end] == '.')) {
    ++digits_end;
  }
  if (digits_end == 0 || digits_end > 30) return std::nullopt;
  try {
    std::size_t used = 0;
    double number = std::stod(value.substr(0, digits_end), &used);
    if (used != digits_end) return std::nullopt;
    return std::pair{number, value.substr(digits_end)};
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::uint64_t> parse_count(std::string_view text) {
  const std::string value = trim(text);
  if (value.empty() || value.size() > 15) return std::nullopt;
  std::uint64_t count = 0;
  for (char c : value) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    count = count * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return count;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto& [number, unit] = *parsed;
  double scale = 1;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  double bytes = number * scale;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 1.8e19) return std::nullopt;
  // Not llround: its long long overflows above 2^63, within the range.
  return static_cast<std::uint64_t>(std::round(bytes));
}

std::optional<std::uint64_t> parse_duration_ms(std::string_view text) {
  auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto& [number, unit] = *parsed;
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  if (unit == "ms") scale = 1;
  if (unit == "m" || unit == "min") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "d") scale = 86'400'000;
  if (unit == "w") scale = 7 * 86'400'000.0;
  if (scale == 0) return std::nullopt;
  const double ms = number * scale;
  if (!std::isfinite(ms) || ms > 1e12) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(ms));
}

std::string_view version_folder() { return KCACHE_VERSION_STRING; }

const Setting* ResolvedConfig::find(std::string_view name) const {
  for (const auto& setting : settings) {
    if (setting.name == name) return &setting;
  }
  return nullptr;
}

namespace {

// What the program set for the row `name`, as text, so every row resolves
// the same way; nullopt when it set nothing.
std::optional<std::string> option_value(const CacheOptions& options, std::string_view name) {
  if (name == "cache_dir") return options.cache_dir;
  if (name == "system_db_path") return options.system_db_path;
  if (name == "disable_cache" && options.disable_cache) {
    return std::string(*options.disable_cache ? "true" : "false");
  }
  if (name == "log_level" && options.log_level) {
    return std::string(log_level_name(*options.log_level));
  }
  if (name == "memory_cache_size" && options.memory_cache_size) {
    return std::to_string(*options.memory_cache_size);
  }
  if (name == "compression") return options.compression;
  if (name == "record") return options.record_path;
  if (name == "trusted_keys") return options.trusted_keys;
  if (name == "sync" && options.sync) return std::string(*options.sync ? "true" : "false");
  if (name == "shared_cache" && options.shared_cache) {
    return std::string(*options.shared_cache ? "true" : "false");
  }
  if (name == "failure_ttl" && options.failure_ttl) {
    return std::to_string(options.failure_ttl->count()) + "ms";
  }
  if (name == "max_size" && options.max_size) return std::to_string(*options.max_size);
  if (name == "max_entries" && options.max_entries) return std::to_string(*options.max_entries);
  if (name == "max_age" && options.max_age) return std::to_string(options.max_age->count()) + "s";
  if (name == "lock_timeout" && options.lock_timeout) {
    return std::to_string(options.lock_timeout->count()) + "ms";
  }
  return std::nullopt;
}

// The row's default and its origin; some depend on the build or the machine.
std::pair<std::string, std::string> default_for(const SettingRow& row, const Env& env) {
  if (row.name == "cache_dir") {
    std::string build = KCACHE_BUILD_CACHE_DIR;
    if (build == "~/.cache/kcache") {
      if (auto xdg = env.get_env("XDG_CACHE_HOME"); xdg && xdg->starts_with("/")) {
        return {*xdg + "/kcache", "env XDG_CACHE_HOME"};
      }
    }
    return {build, "build"};
  }
  if (row.name == "system_db_path") return {default_system_db_path(), "build"};
  return {std::string(row.default_value), "default"};
}

// One row: the program's option, else the environment, else the default; a
// malformed value is reported in `warnings` and replaced by the default.
Setting resolve_row(const SettingRow& row, const CacheOptions& options, const Env& env,
                    std::vector<std::string>& warnings) {
  Setting setting{std::string(row.name), "", "", std::string(row.env_var), std::string(row.doc)};
  if (auto value = option_value(options, row.name)) {
    setting.value = *value;
    setting.origin = "option";
  } else if (auto env_value =
                 options.read_environment ? env.get_env(std::string(row.env_var)) : std::nullopt;
             env_value && (!trim(*env_value).empty() ||
                           // Keys asked for and naming none fail closed
                           // (resolve_config): blank is not "unset" there.
                           (row.name == "trusted_keys" && !env_value->empty()))) {
    setting.value = *env_value;
    setting.origin = "env " + std::string(row.env_var);
  } else {
    std::tie(setting.value, setting.origin) = default_for(row, env);
    // An empty variable means "unset" for the others; for the cache
    // folder it is more likely a script's unset variable
    // (KCACHE_CUSTOM_CACHE_DIR=$SCRATCH) than a wish for the default.
    if (row.name == "cache_dir" && env_value) {
      warnings.push_back("Ignoring " + std::string(row.env_var) + "='" + *env_value +
                         "': expected " + std::string(row.expected) + "; using '" + setting.value +
                         "'");
    }
  }
  if (!valid_value(row.type, setting.value)) {
    auto [fallback, fallback_origin] = default_for(row, env);
    warnings.push_back("Ignoring " + setting.origin.substr(setting.origin.find(' ') + 1) + "='" +
                       setting.value + "': expected " + std::string(row.expected) + "; using '" +
                       fallback + "'");
    setting.value = fallback;
    setting.origin = fallback_origin;
  }
  return setting;
}

}  // namespace

std::string setting_value(std::string_view name, const Env& env) {
  for (const SettingRow& row : kSettingsTable) {
    if (row.name != name) continue;
    std::vector<std::string> warnings;  // the cache's to report
    return resolve_row(row, CacheOptions{}, env, warnings).value;
  }
  return {};
}

ResolvedConfig resolve_config(const CacheOptions& options, Env& env) {
  ResolvedConfig config;
  for (const SettingRow& row : kSettingsTable) {
    config.settings.push_back(resolve_row(row, options, env, config.warnings));
  }

  const auto value_of = [&](std::string_view name) { return config.find(name)->value; };
  config.log_level = *parse_log_level(value_of("log_level"));
  config.memory_cache_size = *parse_size(value_of("memory_cache_size"));
  config.max_size = *parse_size(value_of("max_size"));
  config.max_entries = *parse_count(value_of("max_entries"));
  config.max_age = std::chrono::seconds(*parse_duration_ms(value_of("max_age")) / 1000);
  config.compression = lower(trim(value_of("compression")));
  config.lock_timeout = std::chrono::milliseconds(*parse_duration_ms(value_of("lock_timeout")));
  config.failure_ttl = std::chrono::milliseconds(*parse_duration_ms(value_of("failure_ttl")));
  config.sync = *parse_bool(value_of("sync"));
  config.shared_cache = *parse_bool(value_of("shared_cache"));
  // Recorded even with the cache off: what a program asks for is known
  // whether or not it is cached.
  if (std::string record = value_of("record"); !record.empty()) {
    config.record_path = expand_path(record, env).value_or(record);
  }

  if (std::string_view(KCACHE_BUILD_DISABLED_REASON).size() > 0) {
    config.enabled = false;
    config.disabled_reason = KCACHE_BUILD_DISABLED_REASON;
  } else if (*parse_bool(value_of("disable_cache"))) {
    config.enabled = false;
    const Setting* disable = config.find("disable_cache");
    config.disabled_reason = disable->origin == "option" ? "disabled by the program"
                                                         : disable->env_var + "=" + disable->value;
  }
  if (!config.enabled) return config;

  const std::string keys = value_of("trusted_keys");
  for (std::size_t start = 0; start < keys.size();) {
    const std::size_t end = std::min(keys.find(':', start), keys.size());
    const std::string one = trim(std::string_view(keys).substr(start, end - start));
    if (!one.empty()) config.trusted_keys.push_back(expand_path(one, env).value_or(one));
    start = end + 1;
  }
  // Set, yet naming no key (":" is what "$KEYS:" gives when KEYS is
  // unset; " " too): keys were asked for, so it fails closed, as a key
  // file that cannot be read does: one empty path, which TrustedKeys
  // reports. Only an empty value is "off".
  if (config.trusted_keys.empty() && !keys.empty()) config.trusted_keys.emplace_back();
  if (std::string dir = value_of("system_db_path"); !dir.empty()) {
    config.system_db_path = strip_trailing_slash(expand_path(dir, env).value_or(dir));
  }
  std::string cache_dir = value_of("cache_dir");
  if (cache_dir.empty()) {
    // Only a program's option can be empty here; appending the version
    // folder to it would name "/<version>".
    config.warnings.push_back("cache_dir is empty, so kernels will not be kept in the user cache");
  } else {
    // Only the default folder falls back: a folder the user chose is used
    // as given, and a problem with it is reported when it is written.
    const std::string& origin = config.find("cache_dir")->origin;
    const bool is_default = origin == "build" || origin == "env XDG_CACHE_HOME";
    if (auto expanded = expand_path(cache_dir, env)) {
      config.user_dir = strip_trailing_slash(*expanded) + "/" + std::string(version_folder());
      // An existing version folder is kept even when read-only: it can
      // still serve hits.
      if (is_default && !env.is_dir(config.user_dir)) {
        if (Status writable = env.check_writable(config.user_dir); !writable.is_ok()) {
          use_fallback(config, env,
                       "The cache folder " + config.user_dir + " cannot be created (" +
                           writable.message() + ")",
                       "default not writable");
        }
      }
    } else if (is_default) {
      use_fallback(config, env, "HOME is not set and this user has no home directory",
                   "HOME is not set");
    } else {
      config.warnings.push_back("HOME is not set and this user has no home directory, so '" +
                                cache_dir +
                                "' cannot be used; kernels will not be kept in the user cache "
                                "(set KCACHE_CUSTOM_CACHE_DIR)");
    }
  }
  return config;
}

ResolvedConfig resolve_config(const CacheOptions& options) {
  return resolve_config(options, Env::posix());
}

}  // namespace kcache
