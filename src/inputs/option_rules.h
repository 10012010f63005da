// The option syntax of each compiler dialect kcache knows: which options
// take a value (and how it may be written), which name include folders or
// files, and which read something kcache does not model.
#pragma once

#include <string_view>
#include <vector>

namespace kcache {

// The compilers whose options and header search kcache models. A backend
// names its dialect in CompilerInputs::dialect.
enum class Dialect {
  kGeneric,  // an unknown compiler: -D, -U, -I known, the rest by shape
  kNvrtc,    // NVRTC (CUDA runtime compilation)
  kHiprtc,   // hipRTC (clang options)
  kOpenCl,   // clBuildProgram options (PoCL and the OpenCL specification)
  kGcc,      // gcc, clang, hipcc and other drivers of their family
  kNvcc,     // nvcc
};

// "generic", "nvrtc", "hiprtc", "opencl", "gcc", "nvcc"; parse_dialect is
// its inverse (kGeneric for an unknown name).
std::string_view dialect_name(Dialect dialect);
Dialect parse_dialect(std::string_view name);

enum class OptionRole {
  kHarmless,         // changes the output only through its own text
  kDefine,           // -D NAME[=VALUE]
  kUndefine,         // -U NAME
  kIncludeDir,       // -I DIR: quoted and angled includes
  kQuoteDir,         // -iquote DIR: quoted includes only
  kSystemDir,        // -isystem DIR: after every -I
  kAfterDir,         // -idirafter DIR: after the system folders
  kForcedInclude,    // -include FILE: read before the source
  kMacrosFile,       // -imacros FILE: its macros, before the source
  kNoSourceInclude,  // nvrtc's -no-source-include
  kUnkeyable,        // reads something kcache does not model
};

// How an option's value may be written (a bit set). An option without any
// takes no value.
enum ValueForm : unsigned {
  kNoValue = 0,
  kJoined = 1,    // -Idir
  kSeparate = 2,  // -I dir
  kEquals = 4,    // --include-path=dir
};

struct OptionRule {
  std::string_view name;
  OptionRole role = OptionRole::kHarmless;
  unsigned forms = kNoValue;
  // kJoined, kSeparate or kEquals: how kcache spells it for the compiler
  // and the key. Ignored without a value.
  ValueForm canonical = kJoined;
  // For the unknown-option rule: an option whose name starts with this one
  // (a family such as -f or -W) is harmless, unless a longer rule says
  // otherwise.
  bool prefix_family = false;
  // The spelling kcache uses instead of `name` (--define-macro is -D).
  std::string_view spelled = {};
};

// The rules of one dialect, longest names first (so -include-pch is found
// before -include).
const std::vector<OptionRule>& option_rules(Dialect dialect);

// The same, only those whose name's second character is `c` (every name
// starts with '-'): what a token "-c..." can match. This runs for every
// option of every request.
const std::vector<const OptionRule*>& option_rules(Dialect dialect, char c);

}  // namespace kcache
