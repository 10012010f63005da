// The tables behind option_rules(). Each dialect lists the options that
// take a value (so that value is not read as a stray word), those that name
// include folders or files (they shape the header search), and those that
// read a file or folder kcache does not model (the request is not cached).
// An option in none of them is judged by its shape (options.cpp).
// Sources: gcc's and clang's manuals (Preprocessor Options, Directory
// Options), NVRTC's "Supported Compile Options", nvcc's option list, the
// OpenCL 1.2 specification §5.6.4 and what PoCL 3.1 accepts; behaviours
// checked on this machine are in docs/design.md §1.3.
#include "inputs/option_rules.h"

#include <algorithm>
#include <array>

namespace kcache {
namespace {

using R = OptionRole;

constexpr unsigned kAny = kJoined | kSeparate;

// -D, -U, -I as every C-family compiler spells them.
void add_common(std::vector<OptionRule>& rules) {
  rules.push_back({"-D", R::kDefine, kAny, kJoined});
  rules.push_back({"-U", R::kUndefine, kAny, kJoined});
  rules.push_back({"-I", R::kIncludeDir, kAny, kJoined});
}

// gcc and clang (and drivers built on them: hipcc, amdclang): Preprocessor
// and Directory Options, plus what reads files (plugins, profiles, PCH,
// modules, response files, sysroots, linker inputs).
void add_gcc(std::vector<OptionRule>& rules) {
  add_common(rules);
  rules.push_back({"-iquote", R::kQuoteDir, kAny, kSeparate});
  rules.push_back({"-isystem", R::kSystemDir, kAny, kSeparate});
  rules.push_back({"-idirafter", R::kAfterDir, kAny, kSeparate});
  rules.push_back({"-include", R::kForcedInclude, kSeparate, kSeparate});
  rules.push_back({"-imacros", R::kMacrosFile, kSeparate, kSeparate});
  rules.push_back(
      {"--include-directory", R::kIncludeDir, kSeparate | kEquals, kEquals, false, "-I"});
  for (std::string_view name : {"-I-",
                                "-iprefix",
                                "-iwithprefix",
                                "-iwithprefixbefore",
                                "-isysroot",
                                "--sysroot",
                                "-imultilib",
                                "-iplugindir=",
                                "-include-pch",
                                "-B",
                                "-specs=",
                                "-fplugin=",
                                "-fplugin-arg-",
                                "-fprofile-use",
                                "-fprofile-sample-use=",
                                "-fprofile-instr-use",
                                "-fauto-profile",
                                "-fsanitize-blacklist=",
                                "-fsanitize-ignorelist=",
                                "-fmodule-file=",
                                "-fmodules-cache-path=",
                                "-fprebuilt-module-path=",
                                "-fmodule-map-file=",
                                "-Wp,",
                                "-Xpreprocessor",
                                "-Xclang",
                                "-Xlinker",
                                "-Xassembler",
                                "-Wl,",
                                "-Wa,",
                                "-L",
                                "-l",
                                "-o",
                                "--config",
                                "--cuda-path",
                                "--rocm-path",
                                "--hip-path",
                                "--hip-device-lib-path",
                                "-rocm-device-lib-path",
                                "-cuid",
                                "--gcc-toolchain",
                                "--gcc-install-dir",
                                "-fembed-dir=",
                                "--embed-dir",
                                "-nostdinc"}) {
    // -nostdinc changes which system folders are searched; the rest read
    // files. Any token that starts with one of these names is one of them
    // (-fprofile-use=PATH, -lfoo, -nostdinc++).
    rules.push_back({name, R::kUnkeyable, kJoined | kEquals, kJoined});
  }
  // Options that take a separate value which names no input.
  for (std::string_view name : {"-x", "-MF", "-MT", "-MQ", "-mllvm", "-arch", "-target",
                                "--offload-arch", "--cuda-gpu-arch", "-Xarch_device"}) {
    rules.push_back({name, R::kHarmless, kAny | kEquals, kSeparate});
  }
  // Value-carrying options whose value holds a path that is only written
  // into the output's debug information.
  for (std::string_view name :
       {"-fdebug-prefix-map=", "-ffile-prefix-map=", "-fmacro-prefix-map=",
        "-fdebug-compilation-dir=", "-ffile-compilation-dir=", "-fcoverage-prefix-map="}) {
    rules.push_back({name, R::kHarmless, kJoined, kJoined});
  }
  // Dependency output: harmless beside kcache's own -MD -MF, except those
  // that leave system headers out of the list depend mode checks (-MMD,
  // -MM) or print it instead of compiling (-M).
  for (std::string_view name : {"-MD", "-MP", "-MG"}) rules.push_back({name, R::kHarmless});
  for (std::string_view name : {"-M", "-MM", "-MMD"}) {
    rules.push_back({name, R::kUnkeyable, kNoValue, kJoined});
  }
  // Families: warnings, code generation, machine, optimisation, debug, standards.
  for (std::string_view name : {"-W", "-f", "-m", "-O", "-g", "-std=", "--std=", "-d"}) {
    rules.push_back({name, R::kHarmless, kNoValue, kJoined, true});
  }
}

void add_nvrtc(std::vector<OptionRule>& rules) {
  add_common(rules);
  rules.push_back({"--define-macro", R::kDefine, kSeparate | kEquals, kJoined, false, "-D"});
  rules.push_back({"--undefine-macro", R::kUndefine, kSeparate | kEquals, kJoined, false, "-U"});
  rules.push_back({"--include-path", R::kIncludeDir, kSeparate | kEquals, kJoined, false, "-I"});
  rules.push_back({"--pre-include", R::kForcedInclude, kSeparate | kEquals, kEquals});
  rules.push_back({"-include", R::kForcedInclude, kSeparate, kEquals, false, "--pre-include"});
  rules.push_back({"--no-source-include", R::kNoSourceInclude});
  rules.push_back({"-no-source-include", R::kNoSourceInclude});
  // Reads a precompiled header kcache cannot look into.
  rules.push_back({"--use-pch", R::kUnkeyable, kSeparate | kEquals, kEquals});
  rules.push_back({"--pch-dir", R::kUnkeyable, kSeparate | kEquals, kEquals});
  for (std::string_view name : {"--gpu-architecture",
                                "-arch",
                                "--ptxas-options",
                                "-Xptxas",
                                "--std",
                                "-std",
                                "--maxrregcount",
                                "-maxrregcount",
                                "--time",
                                "-time",
                                "--create-pch",
                                "-create-pch",
                                "--split-compile",
                                "-split-compile",
                                "--optimization-info",
                                "--fdevice-time-trace",
                                "--relocatable-device-code",
                                "-rdc",
                                "--ftz",
                                "-ftz",
                                "--prec-sqrt",
                                "-prec-sqrt",
                                "--prec-div",
                                "-prec-div",
                                "--fmad",
                                "-fmad",
                                "--modify-stack-limit",
                                "-modify-stack-limit",
                                "--diag-error",
                                "--diag-suppress",
                                "--diag-warn",
                                "-diag-error",
                                "-diag-suppress",
                                "-diag-warn",
                                "--jump-table-density",
                                "--device-stack-protector",
                                "-Ofast-compile",
                                "--Ofast-compile",
                                "-dopt",
                                "--dopt"}) {
    rules.push_back({name, R::kHarmless, kSeparate | kEquals, kEquals});
  }
}

void add_opencl(std::vector<OptionRule>& rules) {
  add_common(rules);
  rules.push_back({"-x", R::kHarmless, kAny, kSeparate});
  for (std::string_view name : {"-cl-", "-W", "-g", "-O", "-spir-std="}) {
    rules.push_back({name, R::kHarmless, kNoValue, kJoined, true});
  }
}

void add_nvcc(std::vector<OptionRule>& rules) {
  add_nvrtc(rules);
  rules.push_back({"-isystem", R::kSystemDir, kAny, kSeparate});
  rules.push_back(
      {"--system-include", R::kSystemDir, kSeparate | kEquals, kSeparate, false, "-isystem"});
  for (std::string_view name : {"-Xcompiler",
                                "--compiler-options",
                                "-ccbin",
                                "--compiler-bindir",
                                "-L",
                                "--library-path",
                                "-l",
                                "--library",
                                "-o",
                                "--output-file",
                                "-optf",
                                "--options-file",
                                "-forward-unknown-to-host-compiler",
                                "--forward-unknown-to-host-compiler",
                                "--cudart",
                                "-cudart",
                                "-Xlinker",
                                "--linker-options",
                                "-Xnvlink",
                                "--nvlink-options",
                                "--input-drive-prefix",
                                "--dependency-drive-prefix",
                                "-odir",
                                "--output-directory",
                                "--keep-dir",
                                "-keep-dir"}) {
    rules.push_back({name, R::kUnkeyable, kSeparate | kEquals, kSeparate});
  }
  for (std::string_view name :
       {"-code", "--gpu-code", "-gencode", "--generate-code", "-MF", "--dependency-output", "-MT",
        "--dependency-target-name", "-t", "--threads", "-x", "--x"}) {
    rules.push_back({name, R::kHarmless, kSeparate | kEquals, kSeparate});
  }
  for (std::string_view name : {"-MD", "-MP"}) rules.push_back({name, R::kHarmless});
  for (std::string_view name : {"-M", "-MM", "-MMD"}) {
    rules.push_back({name, R::kUnkeyable, kNoValue, kJoined});
  }
  for (std::string_view name : {"-W", "-O", "-g", "--std="}) {
    rules.push_back({name, R::kHarmless, kNoValue, kJoined, true});
  }
}

std::vector<OptionRule> sorted(std::vector<OptionRule> rules) {
  std::stable_sort(rules.begin(), rules.end(), [](const OptionRule& a, const OptionRule& b) {
    return a.name.size() > b.name.size();
  });
  return rules;
}

std::vector<OptionRule> build(Dialect dialect) {
  std::vector<OptionRule> rules;
  switch (dialect) {
    case Dialect::kGeneric:
      add_common(rules);
      rules.push_back(
          {"--include-path", R::kIncludeDir, kSeparate | kEquals, kJoined, false, "-I"});
      break;
    case Dialect::kNvrtc:
      add_nvrtc(rules);
      break;
    case Dialect::kHiprtc:
    case Dialect::kGcc:
      add_gcc(rules);
      break;
    case Dialect::kOpenCl:
      add_opencl(rules);
      break;
    case Dialect::kNvcc:
      add_nvcc(rules);
      break;
  }
  return sorted(std::move(rules));
}

}  // namespace

std::string_view dialect_name(Dialect dialect) {
  switch (dialect) {
    case Dialect::kGeneric:
      return "generic";
    case Dialect::kNvrtc:
      return "nvrtc";
    case Dialect::kHiprtc:
      return "hiprtc";
    case Dialect::kOpenCl:
      return "opencl";
    case Dialect::kGcc:
      return "gcc";
    case Dialect::kNvcc:
      return "nvcc";
  }
  return "generic";
}

Dialect parse_dialect(std::string_view name) {
  for (Dialect d :
       {Dialect::kNvrtc, Dialect::kHiprtc, Dialect::kOpenCl, Dialect::kGcc, Dialect::kNvcc}) {
    if (dialect_name(d) == name) return d;
  }
  return Dialect::kGeneric;
}

const std::vector<const OptionRule*>& option_rules(Dialect dialect, char c) {
  using Buckets = std::array<std::vector<const OptionRule*>, 256>;
  static const std::array<Buckets, 6> buckets = [] {
    std::array<Buckets, 6> all;
    for (int d = 0; d < 6; ++d) {
      for (const OptionRule& rule : option_rules(static_cast<Dialect>(d))) {
        all[d][static_cast<unsigned char>(rule.name[1])].push_back(&rule);
      }
    }
    return all;
  }();
  return buckets[static_cast<int>(dialect)][static_cast<unsigned char>(c)];
}

const std::vector<OptionRule>& option_rules(Dialect dialect) {
  static const std::vector<OptionRule> tables[] = {
      build(Dialect::kGeneric), build(Dialect::kNvrtc), build(Dialect::kHiprtc),
      build(Dialect::kOpenCl),  build(Dialect::kGcc),   build(Dialect::kNvcc)};
  return tables[static_cast<int>(dialect)];
}

}  // namespace kcache
