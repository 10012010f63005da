#include "inputs/directives.h"

#include <string.h>  // memmem

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace kcache {
namespace {

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

// Past the "..." or '...' literal that starts at `at`: at its closing
// quote's next character, or the end of the text.
std::size_t past_literal(std::string_view text, std::size_t at) {
  const char quote = text[at++];
  while (at < text.size()) {
    const char c = text[at++];
    if (c == '\\' && at < text.size()) {
      ++at;
    } else if (c == quote) {
      break;
    }
  }
  return at;
}

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
  // `raw_strings`: read R"delim(...)delim" as one literal (C++); a
  // language without them reads R then a string.
  explicit Lexer(std::string_view text, bool raw_strings = true)
      : text_(text), raw_strings_(raw_strings) {}

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

  // The rest of the line, comments removed, literals kept whole (a "/*" in
  // one opens no comment), trimmed; pos_ stays at the newline.
  std::string rest_of_line() {
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      if (text_[pos_] == '"' || text_[pos_] == '\'') {
        const std::size_t start = pos_;
        skip_literal();
        out.append(text_.substr(start, pos_ - start));
        continue;
      }
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
      FunctionMacro function{macro, {}, false, {}};
      const bool function_like = pos_ < text_.size() && text_[pos_] == '(';
      if (function_like) read_params(function);
      std::string body = rest_of_line();
      // A body may test for a header (#define HAS __has_include("x.h")),
      // used later in an #if: what it names is looked for as any test is,
      // unless a parameter names it (the scanner follows the calls then).
      if (body.find("__has_") != std::string::npos) {
        for (auto& include : Lexer(body, raw_strings_).run().includes) {
          if (include.kind == IncludeDirective::Kind::kHasInclude &&
              !(include.computed()
                    ? mentions_any(include.expression, function.params)
                    : !include.quoted && mentions_any(include.name, function.params))) {
            found_.includes.push_back(std::move(include));
          }
        }
      }
      if (function_like) {
        function.body = std::move(body);
        found_.function_macros.push_back(std::move(function));
      } else {
        add_calls(body);
        found_.defines.push_back({macro, std::move(body)});
      }
    } else if (name == "if" || name == "elif") {
      const std::size_t start = pos_;
      add_calls(rest_of_line());
      pos_ = start;
    }
    // Anything else: the rest of the line is lexed as code (an #if may
    // hold __has_include).
  }

  // `(a, b, ...)` after a function-like macro's name, pos_ at the '(';
  // pos_ ends past the ')' (or at the end of the line if there is none).
  void read_params(FunctionMacro& function) {
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      skip_blanks();
      std::string param(read_identifier());
      skip_blanks();
      if (text_.substr(pos_).starts_with("...")) {
        function.variadic = true;
        function.params.push_back(param.empty() ? "__VA_ARGS__" : param);
        pos_ += 3;
        skip_blanks();
      } else if (!param.empty()) {
        function.params.push_back(std::move(param));
      }
      if (pos_ >= text_.size() || text_[pos_] == '\n') return;
      const char c = text_[pos_++];
      if (c == ')') return;
      if (c != ',') return;  // not a parameter list a compiler takes
    }
  }

  // The macro calls of an #if line or a macro's body, but __has_include's
  // own (found as includes).
  void add_calls(std::string_view text) {
    auto calls = find_macro_calls(text);
    if (!calls) {
      found_.uncertain = true;  // too deep to follow: the scanner keys everything
      return;
    }
    for (auto& call : *calls) {
      if (!call.name.starts_with("__has_")) found_.calls.push_back(std::move(call));
    }
  }

  // An identifier, or the prefix of a raw string literal, or __has_include.
  void identifier() {
    const std::string_view word = read_identifier();
    if (raw_strings_ && pos_ < text_.size() && text_[pos_] == '"' &&
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
    std::string close(1, ')');  // appended, not joined with +: gcc 12 warns wrongly
    close.append(delimiter).push_back('"');
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
  const bool raw_strings_;
  std::size_t pos_ = 0;
  SourceDirectives found_;
};

// The second opinion: every line (of the spliced text, then of the text
// as it is) whose first token,
// past blanks and comments that end on the line, is '#' or "%:" and whose
// directive is include, import, embed or include_next, read without any
// lexing of what came before: a literal or comment the lexer got wrong
// cannot hide it. Computed ones are added too (their expression as the
// line has it).
void add_line_directives(std::string_view text, SourceDirectives& found) {
  std::set<std::tuple<int, bool, std::string>> known;
  for (const auto& include : found.includes) {
    known.insert({static_cast<int>(include.kind), include.quoted,
                  include.computed() ? "?" + include.expression : include.name});
  }
  auto skip = [](std::string_view& line) {
    while (true) {
      while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
      if (!line.starts_with("/*")) return;
      const std::size_t close = line.find("*/", 2);
      if (close == std::string_view::npos) return;
      line.remove_prefix(close + 2);
    }
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    skip(line);
    if (line.starts_with('#')) {
      line.remove_prefix(1);
    } else if (line.starts_with("%:")) {
      line.remove_prefix(2);
    } else {
      continue;
    }
    skip(line);
    for (std::string_view word : {"include_next", "include", "import", "embed"}) {
      if (!line.starts_with(word) || (line.size() > word.size() && is_ident(line[word.size()]))) {
        continue;
      }
      std::string_view rest = line.substr(word.size());
      skip(rest);
      IncludeDirective include;
      include.kind = word == "embed"          ? IncludeDirective::Kind::kEmbed
                     : word == "include_next" ? IncludeDirective::Kind::kIncludeNext
                                              : IncludeDirective::Kind::kInclude;
      include.next = word == "include_next";
      const char close = rest.starts_with('"') ? '"' : rest.starts_with('<') ? '>' : '\0';
      const std::size_t stop = close != '\0' ? rest.find(close, 1) : std::string_view::npos;
      if (stop != std::string_view::npos && stop > 1) {
        include.quoted = close == '"';
        include.name = std::string(rest.substr(1, stop - 1));
      } else {
        const std::size_t comment = std::min(rest.find("//"), rest.find("/*"));
        std::string_view expression = rest.substr(0, comment);
        while (!expression.empty() && is_blank(expression.back())) expression.remove_suffix(1);
        if (expression.empty()) break;
        include.expression = std::string(expression);
      }
      if (known
              .insert({static_cast<int>(include.kind), include.quoted,
                       include.computed() ? "?" + include.expression : include.name})
              .second) {
        found.includes.push_back(std::move(include));
      }
      break;
    }
  }
}

// Adds what `more` found that `found` did not (a superset of both).
void merge(SourceDirectives& found, SourceDirectives more) {
  std::set<std::tuple<int, bool, std::string>> known;
  for (const auto& include : found.includes) {
    known.insert({static_cast<int>(include.kind), include.quoted,
                  include.computed() ? "?" + include.expression : include.name});
  }
  for (auto& include : more.includes) {
    if (known
            .insert({static_cast<int>(include.kind), include.quoted,
                     include.computed() ? "?" + include.expression : include.name})
            .second) {
      found.includes.push_back(std::move(include));
    }
  }
  for (auto& define : more.defines) found.defines.push_back(std::move(define));
  for (auto& macro : more.function_macros) found.function_macros.push_back(std::move(macro));
  for (auto& call : more.calls) found.calls.push_back(std::move(call));
  found.uncertain = found.uncertain || more.uncertain;
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

// Whether the directive that starts right after `at` (past its '#' or
// "%:") may read a file: include, import, embed, include_next, or an #if,
// #elif or #define whose line mentions __has_ (__has_include, __has_embed).
// Anything it cannot tell at a glance (a comment, a splice) counts.
bool directive_may_read(std::string_view text, std::size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  if (at < text.size() && (text[at] == '/' || text[at] == '\\')) return true;
  std::size_t end = at;
  while (end < text.size() && is_ident(text[end])) ++end;
  if (end < text.size() && text[end] == '\\') return true;  // a splice inside the name
  const std::string_view word = text.substr(at, end - at);
  if (word == "include" || word == "import" || word == "embed" || word == "include_next") {
    return true;
  }
  if (word == "if" || word == "elif" || word == "define") {
    std::size_t line_end = text.find('\n', end);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(end, line_end - end);
    return line.find("__has_") != std::string_view::npos ||
           line.find('\\') != std::string_view::npos;  // continued: look at it all
  }
  return false;
}

bool mentions_any(std::string_view text, const std::vector<std::string>& words) {
  if (words.empty()) return false;
  for (std::size_t at = 0; at < text.size();) {
    if (text[at] == '"' || text[at] == '\'') {
      at = past_literal(text, at);  // no macro is replaced inside a literal
    } else if (is_ident(text[at])) {
      const std::size_t start = at;
      while (at < text.size() && is_ident(text[at])) ++at;
      const std::string_view word = text.substr(start, at - start);
      if (std::find(words.begin(), words.end(), word) != words.end()) return true;
    } else {
      ++at;
    }
  }
  return false;
}

std::optional<std::vector<MacroCall>> find_macro_calls(std::string_view text) {
  // One pass with a stack of the open parentheses (a call's, or a plain
  // one's): each call's arguments are cut at its own commas, the calls
  // inside them found on the way.
  static constexpr std::size_t kNoCall = static_cast<std::size_t>(-1);
  struct Open {
    std::size_t call = kNoCall;  // index into calls, or kNoCall
    std::size_t argument = 0;    // where the call's current argument starts
  };
  static constexpr std::size_t kMaxDepth = 256;
  std::vector<MacroCall> calls;
  std::vector<Open> open;
  auto argument = [&](const Open& at, std::size_t end) {
    std::string_view piece = text.substr(at.argument, end - at.argument);
    while (!piece.empty() && (is_blank(piece.front()) || piece.front() == '\n')) {
      piece.remove_prefix(1);
    }
    while (!piece.empty() && (is_blank(piece.back()) || piece.back() == '\n')) {
      piece.remove_suffix(1);
    }
    calls[at.call].arguments.emplace_back(piece);
  };
  auto close = [&](std::size_t end) {
    const Open last = open.back();
    open.pop_back();
    if (last.call == kNoCall) return;
    argument(last, end);
    auto& arguments = calls[last.call].arguments;
    if (arguments.size() == 1 && arguments[0].empty()) arguments.clear();  // F()
  };
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (c == '"' || c == '\'') {
      at = past_literal(text, at);
    } else if (is_ident(c) && !(c >= '0' && c <= '9')) {
      const std::size_t start = at;
      while (at < text.size() && is_ident(text[at])) ++at;
      const std::string_view name = text.substr(start, at - start);
      std::size_t paren = at;
      while (paren < text.size() && (is_blank(text[paren]) || text[paren] == '\n')) ++paren;
      if (paren < text.size() && text[paren] == '(' && name != "defined") {
        open.push_back({calls.size(), paren + 1});
        calls.push_back({std::string(name), {}});
        at = paren + 1;
      }
    } else if (c >= '0' && c <= '9') {
      while (at < text.size() && is_ident(text[at])) ++at;  // a number, 0x1F too
    } else {
      if (c == '(') {
        open.push_back({});
      } else if (c == ',' && !open.empty() && open.back().call != kNoCall) {
        argument(open.back(), at);
        open.back().argument = at + 1;
      } else if (c == ')' && !open.empty()) {
        close(at);
      }
      ++at;
    }
    if (open.size() > kMaxDepth) return std::nullopt;
  }
  while (!open.empty()) close(text.size());  // unclosed: up to the end
  return calls;
}

bool may_read_files(std::string_view text) {
  // This runs on every request: memchr for each way a directive can
  // start ('#', "%:", the trigraph "??="), then a glance at its name.
  if (contains_pair(text, "??")) return true;
  for (const char start : {'#', '%'}) {
    const char* at = text.data();
    const char* end = text.data() + text.size();
    while ((at = static_cast<const char*>(
                ::memchr(at, start, static_cast<std::size_t>(end - at)))) != nullptr) {
      ++at;
      if (start == '%') {
        if (at == end || *at != ':') continue;
        ++at;
      }
      if (directive_may_read(text, static_cast<std::size_t>(at - text.data()))) return true;
    }
  }
  return false;
}

SourceDirectives find_directives(std::string_view text) {
  const std::string spliced = remove_splices(text);
  SourceDirectives found = Lexer(spliced).run();
  // R"( is a raw string in C++ only: lexed both ways when it occurs, so
  // neither reading can hide a directive.
  if (spliced.find("R\"") != std::string::npos) merge(found, Lexer(spliced, false).run());
  found.uncertain = found.uncertain || has_dangerous_trigraph(text);
  add_line_directives(spliced, found);
  // And the physical lines as they are: a splice read differently from the
  // compiler (a backslash before a CR, say) cannot hide one either.
  if (spliced.size() != text.size()) add_line_directives(text, found);
  return found;
}

}  // namespace kcache
