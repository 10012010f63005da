#include "inputs/directives.h"

#include <string.h>  // memmem

#include <algorithm>
#include <functional>
#include <set>

namespace kcache {
namespace {

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

// Translation phase 2: every backslash followed by a newline (blanks in
// between tolerated, as gcc and clang do) is removed.
std::string remove_splices(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      std::size_t j = i + 1;
      while (j < text.size() && is_blank(text[j])) ++j;
      if (j < text.size() && text[j] == '\n') {
        i = j;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// Whether `text` holds a trigraph that can spell a directive or a splice
// (??= is #, ??/ is a backslash): with -trigraphs a compiler reads them.
bool has_dangerous_trigraph(std::string_view text) {
  for (std::size_t at = text.find("??"); at != std::string_view::npos;
       at = text.find("??", at + 1)) {
    if (at + 2 < text.size() && (text[at + 2] == '=' || text[at + 2] == '/')) return true;
  }
  return false;
}

// A cursor over spliced text, for the phase-3 lexing of one file.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  SourceDirectives run() {
    bool line_start = true;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        line_start = true;
        ++pos_;
      } else if (is_blank(c)) {
        ++pos_;
      } else if (skip_comment()) {
        // a comment is a space: the line's start is still its start
      } else if (line_start && (c == '#' || text_.substr(pos_).starts_with("%:"))) {
        pos_ += c == '#' ? 1 : 2;
        directive();
        line_start = false;
      } else if (c == '"' || c == '\'') {
        skip_literal();
        line_start = false;
      } else if (is_ident(c)) {
        identifier();
        line_start = false;
      } else {
        ++pos_;
        line_start = false;
      }
    }
    return std::move(found_);
  }

 private:
  // Skips a /* */ or // comment at pos_, if one starts there.
  bool skip_comment() {
    if (pos_ + 1 >= text_.size() || text_[pos_] != '/') return false;
    if (text_[pos_ + 1] == '*') {
      const std::size_t end = text_.find("*/", pos_ + 2);
      pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      return true;
    }
    if (text_[pos_ + 1] == '/') {
      const std::size_t end = text_.find('\n', pos_);
      pos_ = end == std::string_view::npos ? text_.size() : end;
      return true;
    }
    return false;
  }

  // Blanks and comments within a line.
  void skip_blanks() {
    while (pos_ < text_.size()) {
      if (is_blank(text_[pos_])) {
        ++pos_;
      } else if (!(text_.substr(pos_).starts_with("/*") && skip_comment())) {
        return;
      }
    }
  }

  std::string_view read_identifier() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // The rest of the line, comments removed, trimmed; pos_ stays at the newline.
  std::string rest_of_line() {
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      if (skip_comment()) {
        out.push_back(' ');
        continue;
      }
      out.push_back(text_[pos_++]);
    }
    const auto first = out.find_first_not_of(" \t\v\f\r");
    if (first == std::string::npos) return {};
    return out.substr(first, out.find_last_not_of(" \t\v\f\r") - first + 1);
  }

  // A "..." or <...> header name at pos_, on this line; false if none.
  bool header_name(IncludeDirective& include) {
    if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '<')) return false;
    const char close = text_[pos_] == '"' ? '"' : '>';
    const std::size_t end = text_.find_first_of(std::string{close, '\n'}, pos_ + 1);
    if (end == std::string_view::npos || text_[end] != close || end == pos_ + 1) return false;
    include.quoted = close == '"';
    include.name = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return true;
  }

  void directive() {
    skip_blanks();
    const std::string_view name = read_identifier();
    using Kind = IncludeDirective::Kind;
    if (name == "include" || name == "import" || name == "include_next" || name == "embed") {
      IncludeDirective include;
      include.kind = name == "include_next" ? Kind::kIncludeNext
                     : name == "embed"      ? Kind::kEmbed
                                            : Kind::kInclude;
      include.next = name == "include_next";
      skip_blanks();
      if (!header_name(include)) include.expression = rest_of_line();
      found_.includes.push_back(std::move(include));
    } else if (name == "define") {
      skip_blanks();
      const std::string macro(read_identifier());
      if (macro.empty()) return;
      if (pos_ < text_.size() && text_[pos_] == '(') {
        found_.function_macros.push_back(macro);
      } else {
        found_.defines.push_back({macro, rest_of_line()});
      }
    }
    // Anything else: the rest of the line is lexed as code (an #if may
    // hold __has_include).
  }

  // An identifier, or the prefix of a raw string literal, or __has_include.
  void identifier() {
    const std::string_view word = read_identifier();
    if (pos_ < text_.size() && text_[pos_] == '"' &&
        (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR") &&
        skip_raw_string()) {
      return;
    }
    if (word == "__has_include" || word == "__has_include_next" || word == "__has_embed") {
      skip_blanks();
      if (pos_ >= text_.size() || text_[pos_] != '(') return;
      ++pos_;
      skip_blanks();
      IncludeDirective include;
      include.kind = IncludeDirective::Kind::kHasInclude;
      include.next = word == "__has_include_next";
      if (!header_name(include)) {
        // A macro names the header: keep the argument as the expression.
        const std::size_t close = text_.find_first_of(")\n", pos_);
        const std::size_t end = close == std::string_view::npos ? text_.size() : close;
        include.expression = std::string(text_.substr(pos_, end - pos_));
        pos_ = end;
      }
      found_.includes.push_back(std::move(include));
    }
  }

  // R"delim( ... )delim": pos_ at the opening quote. False (pos_ kept) when
  // it is not a well-formed raw string, which is then lexed as a string.
  bool skip_raw_string() {
    const std::size_t open = text_.find('(', pos_ + 1);
    if (open == std::string_view::npos || open - pos_ - 1 > 16) return false;
    const std::string_view delimiter = text_.substr(pos_ + 1, open - pos_ - 1);
    if (delimiter.find_first_of(" ()\\\t\v\f\n\"") != std::string_view::npos) return false;
    const std::string close = ")" + std::string(delimiter) + "\"";
    const std::size_t end = text_.find(close, open + 1);
    if (end == std::string_view::npos) return false;
    pos_ = end + close.size();
    return true;
  }

  // A "..." or '...' literal; it ends at its closing quote or at the end
  // of the line, whichever comes first.
  void skip_literal() {
    const char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      const char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size() && text_[pos_] != '\n') {
        ++pos_;
      } else if (c == quote) {
        return;
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  SourceDirectives found_;
};

// The second opinion: every `#include "x"` / `#include <x>` that starts a
// physical line (after blanks), read without any lexing.
void add_literal_lines(std::string_view text, SourceDirectives& found) {
  std::set<std::pair<bool, std::string>> known;
  for (const auto& include : found.includes) {
    if (!include.computed()) known.insert({include.quoted, include.name});
  }
  if (::memmem(text.data(), text.size(), "include", 7) == nullptr) return;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() != '#') continue;
    line.remove_prefix(1);
    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    for (std::string_view word : {"include_next", "include", "import", "embed"}) {
      if (!line.starts_with(word)) continue;
      std::string_view rest = line.substr(word.size());
      while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
      if (rest.empty() || (rest.front() != '"' && rest.front() != '<')) break;
      const char close = rest.front() == '"' ? '"' : '>';
      const std::size_t stop = rest.find(close, 1);
      if (stop == std::string_view::npos || stop == 1) break;
      IncludeDirective include;
      include.kind = word == "embed"          ? IncludeDirective::Kind::kEmbed
                     : word == "include_next" ? IncludeDirective::Kind::kIncludeNext
                                              : IncludeDirective::Kind::kInclude;
      include.quoted = close == '"';
      include.next = word == "include_next";
      include.name = std::string(rest.substr(1, stop - 1));
      if (known.insert({include.quoted, include.name}).second) {
        found.includes.push_back(std::move(include));
      }
      break;
    }
  }
}

}  // namespace

// Whether `pair` occurs in `text`, found with memchr (vectorised) on its
// first character.
bool contains_pair(std::string_view text, const char pair[2]) {
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while ((at = static_cast<const char*>(
              ::memchr(at, pair[0], static_cast<std::size_t>(end - at)))) != nullptr) {
    if (++at < end && *at == pair[1]) return true;
  }
  return false;
}

bool may_read_files(std::string_view text) {
  // A directive starts with '#', "%:" or the trigraph "??=" (this runs on
  // every request: memchr first, the words only where a '#' is).
  const bool hash = ::memchr(text.data(), '#', text.size()) != nullptr;
  if (!hash && !contains_pair(text, "%:") && !contains_pair(text, "??")) return false;
  // A splice can cut a word in two.
  if (::memchr(text.data(), '\\', text.size()) != nullptr) return true;
  for (std::string_view word : {"include", "import", "embed"}) {
    const auto found = std::search(text.begin(), text.end(),
                                   std::boyer_moore_horspool_searcher(word.begin(), word.end()));
    if (found != text.end()) return true;
  }
  return contains_pair(text, "??");
}

SourceDirectives find_directives(std::string_view text) {
  const std::string spliced = remove_splices(text);
  SourceDirectives found = Lexer(spliced).run();
  found.uncertain = has_dangerous_trigraph(text);
  add_literal_lines(text, found);
  return found;
}

}  // namespace kcache
