// Configuration parsing: resolve_config over a fake environment, and the
// value parsers it uses (sizes, switches, log levels, targets, compiler
// options, key hex).
//
// The input is NUL-separated `NAME=value` pieces: `KCACHE_...=v` or
// `XDG_CACHE_HOME=v` set a variable, `HOME=v` the home folder (none when
// absent), `option.<field>=v` a CacheOptions field. Every value is also fed
// to each parser. The environment is a FaultEnv: the real one is hidden.
//
// Invariants: resolution never fails and every setting is valid for its
// type; a well-formed variable wins over the default, a malformed one is
// reported and replaced, an option wins over both; the derived fields agree
// with the settings. Each parser accepts what it prints, ignores case and
// surrounding blanks where documented, and round-trips.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>

#include "build_config.h"
#include "core/config.h"
#include "fakes/fault_env.h"
#include "fuzz_support.h"
#include "inputs/option_rules.h"
#include "inputs/options.h"

namespace kcache::fuzz {
namespace {

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_macro(const std::string& token) {
  return token.size() > 2 && (token.starts_with("-D") || token.starts_with("-U"));
}

// A token quoted for a POSIX shell: '...' with each ' written '\''.
std::string shell_quote(const std::string& token) {
  std::string out = "'";
  for (char c : token) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void check_parse_bool(const std::string& text) {
  auto value = parse_bool(text);
  if (!value) return;
  KCACHE_FUZZ_CHECK(parse_bool(upper(text)) == value, "parse_bool is case-sensitive");
  KCACHE_FUZZ_CHECK(parse_bool(" \t" + text + "\n") == value, "parse_bool does not trim");
  KCACHE_FUZZ_CHECK(parse_bool(*value ? "true" : "false") == value, "parse_bool('true'/'false')");
}

void check_parse_log_level(const std::string& text) {
  auto level = parse_log_level(text);
  if (!level) return;
  KCACHE_FUZZ_CHECK(parse_log_level(log_level_name(*level)) == level,
                    "a log level does not parse back from its name");
  KCACHE_FUZZ_CHECK(parse_log_level(upper(text)) == level, "parse_log_level is case-sensitive");
}

// A count that parses prints back as itself (no sign, no unit, no blank
// inside), and nothing else parses.
void check_parse_count(const std::string& text) {
  auto count = parse_count(text);
  if (!count) return;
  KCACHE_FUZZ_CHECK(parse_count(std::to_string(*count)) == count,
                    "parse_count does not read back its own number");
  for (char c : text) {
    KCACHE_FUZZ_CHECK(std::isdigit(static_cast<unsigned char>(c)) || c == ' ' || c == '\t' ||
                          c == '\n' || c == '\r' || c == '\f' || c == '\v',
                      "parse_count took '" + text + "'");
  }
}

void check_parse_size(const std::string& text) {
  auto size = parse_size(text);
  if (!size) return;
  KCACHE_FUZZ_CHECK(static_cast<double>(*size) <= 1.8e19, "size above the documented range");
  KCACHE_FUZZ_CHECK(parse_size(std::to_string(*size)) == size,
                    "a size does not parse back from its decimal form");
  KCACHE_FUZZ_CHECK(parse_size(" " + upper(text) + "\t") == size,
                    "parse_size is case- or blank-sensitive");
  // A plain byte count is read as that number (exactly up to 2^53, to a
  // double's precision above), and its "K" form as 1024 times it.
  std::string digits = text;
  digits.erase(0, digits.find_first_not_of(" \t\n\r\f\v"));
  digits.erase(digits.find_last_not_of(" \t\n\r\f\v") + 1);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  if (all_digits(digits) && digits.size() <= 19) {
    const double expected = static_cast<double>(std::stoull(digits));
    KCACHE_FUZZ_CHECK(std::fabs(static_cast<double>(*size) - expected) <= expected * 0x1p-52,
                      text + " read as " + std::to_string(*size));
    auto kib = parse_size(digits + "K");
    KCACHE_FUZZ_CHECK(
        expected * 1024 > 1.8e19
            ? !kib.has_value()
            : kib.has_value() && std::fabs(static_cast<double>(*kib) - expected * 1024) <=
                                     expected * 1024 * 0x1p-52,
        text + "K read wrong");
  }
}

void check_target(const std::string& text) {
  auto target = Target::parse(text);
  if (!target) {
    KCACHE_FUZZ_CHECK(target.status().code() == StatusCode::kInvalidArgument,
                      target.status().to_string());
    return;
  }
  KCACHE_FUZZ_CHECK(!target->arch.empty() && target->arch.size() <= 128 && target->units >= 0,
                    "parsed a malformed target from '" + text + "'");
  KCACHE_FUZZ_CHECK(target->to_string().starts_with(target->db_basename()) &&
                        target->db_basename().starts_with(target->arch_basename()),
                    "target names disagree");
  auto again = Target::parse(target->to_string());
  KCACHE_FUZZ_CHECK(again.is_ok() && *again == *target,
                    "'" + text + "' -> '" + target->to_string() + "' does not parse back equal");
}

void check_parsed(const std::vector<std::string>& tokens, Dialect dialect);

void check_options(const std::string& text) {
  auto tokens = split_options(text);
  if (!tokens) {
    KCACHE_FUZZ_CHECK(tokens.status().code() == StatusCode::kInvalidArgument,
                      tokens.status().to_string());
    return;
  }
  // Quoting each token and splitting again gives the same tokens.
  std::string quoted;
  for (const auto& token : *tokens) quoted += shell_quote(token) + " ";
  auto requoted = split_options(quoted);
  KCACHE_FUZZ_CHECK(requoted.is_ok() && *requoted == *tokens, "quoted tokens split differently");

  for (Dialect dialect : {Dialect::kGeneric, Dialect::kNvrtc, Dialect::kHiprtc, Dialect::kOpenCl,
                          Dialect::kGcc, Dialect::kNvcc}) {
    check_parsed(*tokens, dialect);
  }
}

// The canonical tokens (what the compiler gets and the key holds): macros
// last, sorted when no name repeats; parsing them again gives them back
// with the same folders and files, or finds them unkeyable (never a
// different keyable meaning); every folder and file is in a token.
void check_parsed(const std::vector<std::string>& tokens, Dialect dialect) {
  auto parsed = parse_options(tokens, dialect);
  if (!parsed) {
    KCACHE_FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument,
                      parsed.status().to_string());
    return;
  }
  const std::vector<std::string>& normal = parsed->tokens;
  // A token can be the value of the option before it, not an option: a
  // file named "-UX" after -include, or a folder named "-DQ" after -L (an
  // option that takes a separate value, whatever its value names).
  const auto takes_separate_value = [&](const std::string& option) {
    return std::any_of(
        option_rules(dialect).begin(), option_rules(dialect).end(), [&](const OptionRule& rule) {
          return (rule.name == option || rule.spelled == option) && (rule.forms & kSeparate) != 0;
        });
  };
  const auto is_value = [&](std::size_t i) {
    return i > 0 && normal[i - 1].starts_with("-") && !is_macro(normal[i - 1]) &&
           (takes_separate_value(normal[i - 1]) ||
            std::any_of(parsed->paths.begin(), parsed->paths.end(),
                        [&](const PathOption& p) { return p.path == normal[i]; }));
  };
  auto first_macro = normal.begin();
  while (first_macro != normal.end() &&
         (!is_macro(*first_macro) || is_value(first_macro - normal.begin()))) {
    ++first_macro;
  }
  KCACHE_FUZZ_CHECK(std::all_of(first_macro, normal.end(), is_macro),
                    "a -D/-U option is followed by another option");
  std::set<std::string_view> names;
  bool unique = true;
  for (auto it = first_macro; it != normal.end(); ++it) {
    unique = names.insert(macro_name(std::string_view(*it).substr(2))).second && unique;
  }
  if (unique) {
    KCACHE_FUZZ_CHECK(std::is_sorted(first_macro, normal.end()), "distinct macros are not sorted");
  }
  if (!parsed->unkeyable.empty()) return;
  auto again = parse_options(normal, dialect);
  KCACHE_FUZZ_CHECK(again.is_ok(), "canonical tokens do not parse: " + again.status().to_string());
  if (!again->unkeyable.empty()) return;
  KCACHE_FUZZ_CHECK(again->tokens == normal, "parsing the canonical tokens changed them");
  KCACHE_FUZZ_CHECK(again->paths.size() == parsed->paths.size(), "canonical tokens lost paths");
  for (std::size_t i = 0; i < parsed->paths.size(); ++i) {
    KCACHE_FUZZ_CHECK(again->paths[i].role == parsed->paths[i].role &&
                          again->paths[i].path == parsed->paths[i].path,
                      "canonical tokens name another path");
    const std::string& path = parsed->paths[i].path;
    KCACHE_FUZZ_CHECK(std::any_of(normal.begin(), normal.end(),
                                  [&](const std::string& t) { return t.ends_with(path); }),
                      "a path that no token names");
  }
}

void check_key_hex(const std::string& text) {
  auto key = CacheKey::from_hex(text);
  const bool hex =
      text.size() == 2 * CacheKey::kSize &&
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
  KCACHE_FUZZ_CHECK(key.has_value() == hex, "from_hex accepts exactly 2 * kSize hex digits");
  if (key) {
    KCACHE_FUZZ_CHECK(key->hex() == lower(text), "hex() is not the lower-case input");
    KCACHE_FUZZ_CHECK(CacheKey::from_hex(key->hex()) == key, "hex() does not parse back");
  }
}

// What the input sets: variables, home, options. Creating folders fails,
// so that resolution (which may claim a fallback cache folder) leaves the
// disk as it was.
struct Setup {
  Setup() { env.fail_mkdir = Status::io_error("the fuzzer leaves the disk alone"); }
  testing::FaultEnv env;
  CacheOptions options;
};

void apply(Setup& setup, const std::string& piece) {
  const std::size_t equals = piece.find('=');
  if (equals == std::string::npos) return;
  const std::string name = piece.substr(0, equals);
  const std::string value = piece.substr(equals + 1);
  CacheOptions& o = setup.options;
  if (name == "HOME") {
    setup.env.home = value;
  } else if (name.starts_with("KCACHE_") || name == "XDG_CACHE_HOME") {
    setup.env.vars[name] = value;
  } else if (name == "option.cache_dir") {
    o.cache_dir = value;
  } else if (name == "option.system_db_path") {
    o.system_db_path = value;
  } else if (name == "option.disable_cache") {
    o.disable_cache = parse_bool(value);
  } else if (name == "option.log_level") {
    o.log_level = parse_log_level(value);
  } else if (name == "option.memory_cache_size") {
    o.memory_cache_size = parse_size(value);
  } else if (name == "option.compression") {
    o.compression = value;
  } else if (name == "option.read_environment") {
    o.read_environment = parse_bool(value).value_or(true);
  }
}

bool option_set(const CacheOptions& o, const std::string& name) {
  return (name == "cache_dir" && o.cache_dir) || (name == "system_db_path" && o.system_db_path) ||
         (name == "disable_cache" && o.disable_cache) || (name == "log_level" && o.log_level) ||
         (name == "memory_cache_size" && o.memory_cache_size) ||
         (name == "compression" && o.compression);
}

void check_resolution(Setup& setup) {
  const CacheOptions& options = setup.options;
  ResolvedConfig config = resolve_config(options, setup.env);

  std::set<std::string> names;
  for (const Setting& setting : config.settings) {
    KCACHE_FUZZ_CHECK(names.insert(setting.name).second, "setting listed twice: " + setting.name);
    const std::string& var = setting.env_var;
    auto env_value = setup.env.get_env(var);
    const bool env_usable = options.read_environment && env_value && !blank(*env_value);
    if (setting.origin == "option") {
      KCACHE_FUZZ_CHECK(option_set(options, setting.name),
                        setting.name + " claims an option that was not set");
    } else if (setting.origin.starts_with("env ")) {
      // The variable's own value, or XDG_CACHE_HOME's default.
      if (setting.origin == "env " + var) {
        KCACHE_FUZZ_CHECK(env_usable && setting.value == *env_value,
                          setting.name + " claims " + var + " but does not hold its value");
      } else {
        KCACHE_FUZZ_CHECK(setting.name == "cache_dir" && setting.origin == "env XDG_CACHE_HOME",
                          setting.name + " has origin " + setting.origin);
      }
    } else if (setting.origin.starts_with("fallback (")) {
      KCACHE_FUZZ_CHECK(setting.name == "cache_dir" && config.user_dir.starts_with(setting.value),
                        setting.name + " fell back to " + setting.value);
    } else {
      KCACHE_FUZZ_CHECK(setting.origin == "default" || setting.origin == "build",
                        setting.name + " has origin " + setting.origin);
    }
    // A usable variable is used unless an option overrides it; a malformed
    // one is named in a warning.
    if (env_usable && !option_set(options, setting.name) && setting.origin != "option" &&
        setting.origin != "env " + var) {
      const bool warned =
          std::any_of(config.warnings.begin(), config.warnings.end(),
                      [&](const std::string& w) { return w.starts_with("Ignoring " + var + "="); });
      KCACHE_FUZZ_CHECK(warned, var + " was dropped without a warning");
    }
  }
  for (const char* name : {"cache_dir", "disable_cache", "system_db_path", "log_level",
                           "memory_cache_size", "compression"}) {
    KCACHE_FUZZ_CHECK(config.find(name) != nullptr, std::string("missing setting ") + name);
  }

  // Derived fields follow the settings.
  KCACHE_FUZZ_CHECK(parse_log_level(config.find("log_level")->value) == config.log_level,
                    "log_level field differs from its setting");
  KCACHE_FUZZ_CHECK(parse_size(config.find("memory_cache_size")->value) == config.memory_cache_size,
                    "memory_cache_size field differs from its setting");
  KCACHE_FUZZ_CHECK(parse_size(config.find("max_size")->value) == config.max_size,
                    "max_size field differs from its setting");
  KCACHE_FUZZ_CHECK(parse_count(config.find("max_entries")->value) == config.max_entries,
                    "max_entries field differs from its setting");
  KCACHE_FUZZ_CHECK(config.compression == "none" || config.compression == "zstd",
                    "compression '" + config.compression + "'");
  auto disabled = parse_bool(config.find("disable_cache")->value);
  KCACHE_FUZZ_CHECK(disabled.has_value(), "disable_cache holds an invalid value");
  KCACHE_FUZZ_CHECK(
      config.enabled == (!*disabled && std::string_view(KCACHE_BUILD_DISABLED_REASON).empty()) &&
          config.enabled == config.disabled_reason.empty(),
      "enabled does not follow disable_cache");
  if (!config.enabled) {
    KCACHE_FUZZ_CHECK(config.user_dir.empty() && config.system_db_path.empty(),
                      "a disabled cache has folders");
    return;
  }
  const std::string suffix = "/" + std::string(version_folder());
  if (config.user_dir.empty()) {
    // Only an empty cache dir, or one that needs a home folder without
    // one, is dropped.
    const std::string& dir = config.find("cache_dir")->value;
    KCACHE_FUZZ_CHECK(dir.empty() || (!setup.env.home && (dir == "~" || dir.starts_with("~/"))),
                      "no user dir for cache_dir '" + dir + "'");
    KCACHE_FUZZ_CHECK(!config.warnings.empty(), "a dropped user dir without a warning");
  } else {
    KCACHE_FUZZ_CHECK(config.user_dir.ends_with(suffix) && config.user_dir.size() > suffix.size(),
                      "user dir '" + config.user_dir + "' lacks the version folder");
  }
  KCACHE_FUZZ_CHECK(config.system_db_path.empty() == config.find("system_db_path")->value.empty(),
                    "system db path appeared or vanished");
}

}  // namespace
}  // namespace kcache::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::fuzz;
  Setup setup;
  for (const std::string& piece : split_pieces(as_text(data, size))) {
    apply(setup, piece);
    const std::string value =
        piece.substr(piece.find('=') == std::string::npos ? 0 : piece.find('=') + 1);
    for (const std::string* text : {&piece, &value}) {
      check_parse_bool(*text);
      check_parse_log_level(*text);
      check_parse_size(*text);
      check_parse_count(*text);
      check_target(*text);
      check_options(*text);
      check_key_hex(*text);
    }
  }
  check_resolution(setup);
  return 0;
}
