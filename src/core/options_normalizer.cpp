#include "core/options_normalizer.h"

#include <algorithm>
#include <set>

namespace kcache {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string macro_name(const std::string& token) {
  std::string body = token.substr(2);
  return body.substr(0, body.find('='));
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
      current.push_back(c);
    }
  }
  if (in_token) tokens.push_back(std::move(current));
  return tokens;
}

std::vector<std::string> normalize_options(std::vector<std::string> tokens) {
  // Nothing to join or sort (most requests; this runs on every one).
  const bool simple = std::none_of(tokens.begin(), tokens.end(), [](const std::string& t) {
    return t.starts_with("-D") || t.starts_with("-U") || t == "-I" || t == "--include-path";
  });
  if (simple) return tokens;
  std::vector<std::string> joined;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    bool takes_value = t == "-D" || t == "-U" || t == "-I" || t == "--include-path";
    if (takes_value && i + 1 < tokens.size()) {
      joined.push_back(t == "--include-path" ? "--include-path=" + tokens[i + 1]
                                             : t + tokens[i + 1]);
      ++i;
    } else {
      joined.push_back(t);
    }
  }

  std::vector<std::string> others;
  std::vector<std::string> macros;
  for (auto& t : joined) {
    bool is_macro = t.size() > 2 && (t.starts_with("-D") || t.starts_with("-U"));
    (is_macro ? macros : others).push_back(std::move(t));
  }
  std::set<std::string> names;
  bool unique = true;
  for (const auto& m : macros) unique = unique && names.insert(macro_name(m)).second;
  if (unique) std::sort(macros.begin(), macros.end());
  others.insert(others.end(), macros.begin(), macros.end());
  return others;
}

std::vector<std::string> include_dirs_in(const std::vector<std::string>& normalized) {
  std::vector<std::string> dirs;
  for (const auto& t : normalized) {
    if (t.size() > 2 && t.starts_with("-I")) dirs.push_back(t.substr(2));
    if (t.starts_with("--include-path=")) dirs.push_back(t.substr(15));
  }
  return dirs;
}

}  // namespace kcache
