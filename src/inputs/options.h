// Compiler options as kcache reads them: split like a shell would, then
// parsed with the option syntax of one compiler dialect (option_rules.h),
// into the canonical tokens that are both keyed and given to the compiler
// (docs/design.md §1.3), and the folders and files they make it read.
#pragma once

#include <kcache/compiler.h>
#include <kcache/status.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/option_rules.h"

namespace kcache {

// Splits like a POSIX shell would (whitespace, '...' and "..." quoting,
// backslash escapes), without expansion. kInvalidArgument on an unterminated
// quote or a trailing backslash.
Result<std::vector<std::string>> split_options(std::string_view options);

// An option that makes the compiler read a folder or a file, in the order
// given.
struct PathOption {
  OptionRole role = OptionRole::kIncludeDir;
  std::string path;
};

struct ParsedOptions {
  // What the compiler receives and the key holds, in this order: every
  // option in its canonical spelling (a value joined to its option where
  // the dialect allows it), the macro options (-D, -U, and their long
  // forms, spelled -D/-U) after the others, sorted when no macro name
  // repeats (then their order cannot matter), in their order otherwise.
  std::vector<std::string> tokens;
  // The include folders and files named, in the order given.
  std::vector<PathOption> paths;
  // Set when an option reads a file or folder kcache does not model, or
  // may (an option it does not know whose value looks like a path, a
  // stray word): the request cannot be keyed. Says which option, and why.
  std::string unkeyable;
  // -no-source-include (nvrtc): the main source's folder is not searched.
  bool no_source_include = false;
};

// Parses split `tokens` with `dialect`'s rules. `harmless`: option names the
// caller declared harmless (kept as given, never unkeyable).
// kInvalidArgument for an option that needs a value and has none.
Result<ParsedOptions> parse_options(const std::vector<std::string>& tokens, Dialect dialect,
                                    const std::vector<std::string>& harmless = {});

// The same from one option string (split first).
Result<ParsedOptions> parse_options(std::string_view options, Dialect dialect,
                                    const std::vector<std::string>& harmless = {});

// `request.options` as `inputs`' compiler receives them: parse_options()
// with its dialect and harmless options, the tokens the key holds.
Result<ParsedOptions> request_options(const KernelRequest& request, const CompilerInputs& inputs);

// The macro name of a -D/-U value: up to '(' or '='.
std::string_view macro_name(std::string_view value);

// `tokens` as one option string, for a backend that takes one (OpenCL):
// joined by single spaces. nullopt when a token holds whitespace, a quote
// or a backslash: OpenCL platforms split option strings each their own way
// (PoCL splits at every space and drops double quotes), so such a token
// cannot be passed as itself.
std::optional<std::string> join_options(const std::vector<std::string>& tokens);

}  // namespace kcache
