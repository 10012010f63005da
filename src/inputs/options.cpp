#include "inputs/options.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

namespace kcache {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The rule `token` is an instance of, with its value; nullptr when none.
struct Match {
  const OptionRule* rule = nullptr;
  std::string value;
  bool takes_next = false;  // the value is the next token
  bool family = false;      // matched a prefix family (-f..., -W...)
};

Match match(Dialect dialect, std::string_view token) {
  if (token.size() < 2 || token[0] != '-') return {};  // every option starts with '-'
  for (const OptionRule* candidate : option_rules(dialect, token[1])) {
    const OptionRule& rule = *candidate;
    const std::string_view name = rule.name;
    if (!token.starts_with(name)) continue;
    const std::string_view rest = token.substr(name.size());
    if (rest.empty()) {
      if (rule.forms & kSeparate) return {&rule, {}, true, false};
      if (rule.forms == kNoValue || rule.role == OptionRole::kUnkeyable || rule.prefix_family) {
        return {&rule, {}, false, rule.prefix_family};
      }
      continue;  // joined-only option without its value: not this one
    }
    if ((rule.forms & kEquals) && rest.front() == '=') {
      return {&rule, std::string(rest.substr(1)), false, false};
    }
    if (rule.forms & kJoined) return {&rule, std::string(rest), false, false};
    if (rule.prefix_family) return {&rule, {}, false, true};
  }
  return {};
}

// Whether an option kcache does not know may make the compiler read a file
// or folder: a stray word (a file name, or the value of an unknown option),
// or a path in it.
std::string unknown_reason(std::string_view token) {
  // Appended piece by piece: gcc 12 warns (-Wrestrict, wrongly) about the
  // same text joined with operator+.
  auto reason = [token](std::string_view before, std::string_view after) {
    std::string text(before);
    text.append(token).append(after).append(" (if it reads no file, declare it harmless)");
    return text;
  };
  if (!token.starts_with('-') || token == "-") {
    return reason("'", "' is not an option kcache knows and may name a file");
  }
  if (token.find('/') != std::string_view::npos) {
    return reason("option '", "' is unknown to kcache and names a path");
  }
  if (std::size_t eq = token.find('='); eq != std::string_view::npos && eq + 1 < token.size()) {
    std::error_code error;
    if (std::filesystem::exists(std::string(token.substr(eq + 1)), error)) {
      return reason("option '", "' is unknown to kcache and names a file");
    }
  }
  return {};
}

bool declared_harmless(const std::vector<std::string>& harmless, std::string_view token) {
  for (const auto& name : harmless) {
    if (name.empty()) continue;
    if (token == name) return true;
    if (token.starts_with(name) && token.size() > name.size() &&
        (token[name.size()] == '=' || name.back() == '=')) {
      return true;
    }
  }
  return false;
}

bool is_macro(OptionRole role) {
  return role == OptionRole::kDefine || role == OptionRole::kUndefine;
}

bool is_path(OptionRole role) {
  switch (role) {
    case OptionRole::kIncludeDir:
    case OptionRole::kQuoteDir:
    case OptionRole::kSystemDir:
    case OptionRole::kAfterDir:
    case OptionRole::kForcedInclude:
    case OptionRole::kMacrosFile:
      return true;
    default:
      return false;
  }
}

// The option as kcache spells it: one token, or two for a separate value.
void spell(const OptionRule& rule, const std::string& value, std::vector<std::string>& out) {
  const std::string name(rule.spelled.empty() ? rule.name : rule.spelled);
  switch (rule.canonical) {
    case kSeparate:
      out.push_back(name);
      out.push_back(value);
      return;
    case kEquals:
      out.push_back(name + "=" + value);
      return;
    default:
      out.push_back(name + value);
      return;
  }
}

}  // namespace

Result<std::vector<std::string>> split_options(std::string_view options) {
  std::vector<std::string> tokens;
  std::string current;
  bool in_token = false;
  for (std::size_t i = 0; i < options.size(); ++i) {
    char c = options[i];
    if (is_space(c)) {
      if (in_token) tokens.push_back(std::move(current));
      current.clear();
      in_token = false;
      continue;
    }
    in_token = true;
    if (c == '\\') {
      if (++i == options.size()) return Status::invalid_argument("options end with a backslash");
      current.push_back(options[i]);
    } else if (c == '\'') {
      std::size_t end = options.find('\'', i + 1);
      if (end == std::string_view::npos)
        return Status::invalid_argument("unterminated ' in options");
      current.append(options.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i == options.size()) return Status::invalid_argument("unterminated \" in options");
        if (options[i] == '"') break;
        if (options[i] == '\\' && i + 1 < options.size() &&
            (options[i + 1] == '"' || options[i + 1] == '\\')) {
          ++i;
        }
        current.push_back(options[i]);
      }
    } else {
      // A run of plain characters at once.
      std::size_t end = i + 1;
      while (end < options.size() && !is_space(options[end]) && options[end] != '\\' &&
             options[end] != '\'' && options[end] != '"') {
        ++end;
      }
      current.append(options.substr(i, end - i));
      i = end - 1;
    }
  }
  if (in_token) tokens.push_back(std::move(current));
  return tokens;
}

std::string_view macro_name(std::string_view value) {
  // The identifier: "-DA 1" (a shell-quoted space) is A, as gcc reads it.
  std::size_t end = 0;
  while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) ||
                                value[end] == '_' || value[end] == '$')) {
    ++end;
  }
  return value.substr(0, end);
}

Result<ParsedOptions> parse_options(const std::vector<std::string>& tokens, Dialect dialect,
                                    const std::vector<std::string>& harmless) {
  ParsedOptions parsed;
  std::vector<std::string> macros;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (declared_harmless(harmless, token)) {
      parsed.tokens.push_back(token);
      continue;
    }
    Match found = match(dialect, token);
    if (found.rule == nullptr || found.family) {
      if (found.rule == nullptr && parsed.unkeyable.empty())
        parsed.unkeyable = unknown_reason(token);
      parsed.tokens.push_back(token);
      continue;
    }
    const OptionRule& rule = *found.rule;
    if (found.takes_next) {
      if (i + 1 == tokens.size()) {
        return Status::invalid_argument("option '" + token + "' needs a value");
      }
      found.value = tokens[++i];
    }
    if (rule.role == OptionRole::kUnkeyable) {
      if (parsed.unkeyable.empty()) {
        parsed.unkeyable = "option '" + std::string(rule.name) +
                           "' reads files or folders kcache does not look into";
      }
      parsed.tokens.push_back(token);
      if (found.takes_next) parsed.tokens.push_back(found.value);
      continue;
    }
    if (rule.role == OptionRole::kNoSourceInclude) parsed.no_source_include = true;
    if (rule.forms == kNoValue) {
      parsed.tokens.push_back(token);
      continue;
    }
    if (is_macro(rule.role)) {
      if (found.value.empty())
        return Status::invalid_argument("option '" + token + "' needs a macro name");
      macros.push_back((rule.role == OptionRole::kDefine ? "-D" : "-U") + found.value);
      continue;
    }
    if (is_path(rule.role)) {
      if (found.value.empty()) {
        return Status::invalid_argument("option '" + token + "' needs a folder or file");
      }
      if ((found.value.starts_with('=') || found.value.starts_with("$SYSROOT")) &&
          parsed.unkeyable.empty()) {
        parsed.unkeyable = "option '" + std::string(rule.name) + found.value +
                           "' names a folder in the sysroot, which kcache does not look into";
      }
      parsed.paths.push_back({rule.role, found.value});
    }
    spell(rule, found.value, parsed.tokens);
  }

  std::set<std::string_view> names;
  bool unique = true;
  for (const auto& m : macros) {
    unique = unique && names.insert(macro_name(std::string_view(m).substr(2))).second;
  }
  if (unique) std::sort(macros.begin(), macros.end());
  parsed.tokens.insert(parsed.tokens.end(), std::make_move_iterator(macros.begin()),
                       std::make_move_iterator(macros.end()));
  return parsed;
}

Result<ParsedOptions> parse_options(std::string_view options, Dialect dialect,
                                    const std::vector<std::string>& harmless) {
  auto tokens = split_options(options);
  if (!tokens) return tokens.status();
  return parse_options(*tokens, dialect, harmless);
}

Result<ParsedOptions> request_options(const KernelRequest& request, const CompilerInputs& inputs) {
  return parse_options(request.options, parse_dialect(inputs.dialect), inputs.harmless_options);
}

std::optional<std::string> join_options(const std::vector<std::string>& tokens) {
  std::string joined;
  for (const auto& token : tokens) {
    if (token.empty() || token.find_first_of(" \t\n\r\v\f'\"\\") != std::string::npos) {
      return std::nullopt;
    }
    if (!joined.empty()) joined.push_back(' ');
    joined += token;
  }
  return joined;
}

}  // namespace kcache
