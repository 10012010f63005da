// The directives of a source or header that can make a compiler read a
// file: #include (and #import, #include_next, #embed) and __has_include,
// read as the preprocessor reads them: after line splices, with comments
// as spaces, `%:` as `#`, and literals skipped, so that
// `/* c */ #include "x.h"` and `#inc\<newline>lude "y.h"` are found.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache {

struct IncludeDirective {
  enum class Kind {
    kInclude,      // #include, #import
    kIncludeNext,  // #include_next
    kEmbed,        // #embed: read, not preprocessed
    kHasInclude,   // __has_include, __has_include_next, __has_embed: only looked for
  };
  Kind kind = Kind::kInclude;
  bool quoted = false;  // "name" rather than <name>
  // #include_next, __has_include_next: the search resumes past the folder
  // the including file was found in.
  bool next = false;
  std::string name;  // empty for a computed include
  // For a computed include (`#include MACRO`): the text after the directive.
  std::string expression;
  [[nodiscard]] bool computed() const { return name.empty(); }
};

// An object-like macro: `#define NAME value`, comments removed, trimmed.
struct MacroDefinition {
  std::string name;
  std::string value;
};

// A function-like macro: `#define NAME(params) body`. A variadic one's
// last parameter is "__VA_ARGS__" (or its own name, `args...`).
struct FunctionMacro {
  std::string name;
  std::vector<std::string> params;
  bool variadic = false;
  std::string body;  // comments removed, trimmed
};

// `NAME(arguments)` in an #if or #elif line or an object-like macro's
// body: if NAME turns out to wrap __has_include (CCCL's
// `#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)`), the call tests for
// the header its argument names.
struct MacroCall {
  std::string name;
  std::vector<std::string> arguments;  // trimmed, split at top-level commas
};

struct SourceDirectives {
  std::vector<IncludeDirective> includes;
  std::vector<MacroDefinition> defines;
  std::vector<FunctionMacro> function_macros;
  std::vector<MacroCall> calls;
  // Something could not be read with certainty (trigraphs, which can spell
  // `#` and a line splice): whoever keys the text must not trust the list.
  bool uncertain = false;
};

// Whether `text` can hold a directive that reads a file at all: without
// the words include, import or embed, a backslash (a splice can join one)
// or "??" (a trigraph can spell one) it cannot. Cheap; most generated
// kernels include nothing. (A call of a macro that wraps __has_include
// needs that macro defined: by an include, or by an option, which the key
// builder looks at itself.)
bool may_read_files(std::string_view text);

// The directives of `text`: those the preprocessor sees, plus, as a second
// opinion, every literal #include at the start of a physical line (a line
// a lexing mistake could have hidden): a superset, never fewer.
SourceDirectives find_directives(std::string_view text);

// Every `NAME(...)` in `text` (a directive's line or a macro's body), those
// inside another's arguments too, but `defined(...)`; literals are skipped.
// nullopt when parentheses nest deeper than kcache follows (256).
std::optional<std::vector<MacroCall>> find_macro_calls(std::string_view text);

// Whether one of `words` is an identifier token of `text` (outside its
// string and character literals, where no macro is replaced).
bool mentions_any(std::string_view text, const std::vector<std::string>& words);

}  // namespace kcache
