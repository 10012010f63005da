#include "inputs/options.h"

#include <gtest/gtest.h>

namespace kcache {
namespace {

using Tokens = std::vector<std::string>;

Tokens canonical(const Tokens& tokens, Dialect dialect = Dialect::kGeneric) {
  auto parsed = parse_options(tokens, dialect);
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  return parsed.is_ok() ? parsed->tokens : Tokens{};
}

std::string unkeyable(const std::string& options, Dialect dialect,
                      const std::vector<std::string>& harmless = {}) {
  auto parsed = parse_options(options, dialect, harmless);
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  return parsed.is_ok() ? parsed->unkeyable : "parse failed";
}

TEST(SplitOptionsTest, ShellQuoting) {
  auto tokens = split_options("  -DA=1 -I 'my dir' \"-DB=x y\" -DC=\\\"q\\\"  ");
  ASSERT_TRUE(tokens.is_ok());
  EXPECT_EQ(*tokens, (Tokens{"-DA=1", "-I", "my dir", "-DB=x y", "-DC=\"q\""}));
  EXPECT_EQ(split_options("")->size(), 0u);
  EXPECT_FALSE(split_options("'open").is_ok());
  EXPECT_FALSE(split_options("\"open").is_ok());
  EXPECT_FALSE(split_options("trailing\\").is_ok());
}

TEST(ParseOptionsTest, JoinsSeparatedValuesAndSortsUniqueMacros) {
  Tokens a = canonical({"-O3", "-D", "B=2", "-I", "inc", "-DA=1"});
  Tokens b = canonical({"-DA=1", "-O3", "-Iinc", "-DB=2"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (Tokens{"-O3", "-Iinc", "-DA=1", "-DB=2"}));
}

TEST(ParseOptionsTest, KeepsOrderWhenAMacroRepeats) {
  // The last definition wins, so order matters here.
  EXPECT_NE(canonical({"-DX=1", "-DX=2"}), canonical({"-DX=2", "-DX=1"}));
  EXPECT_EQ(canonical({"-DX", "-UX"}), (Tokens{"-DX", "-UX"}));
  // A function-like macro's name ends at '(' (audit K7).
  EXPECT_NE(canonical({"-DF(x)=x", "-UF"}), canonical({"-UF", "-DF(x)=x"}));
}

// A macro's name is its identifier: "-DA 1" defines A, so it and -UA keep
// their order (found by the review of issue 10).
TEST(ParseOptionsTest, AMacroNameEndsWhereTheIdentifierDoes) {
  EXPECT_NE(canonical({"-UA", "-DA 1"}), canonical({"-DA 1", "-UA"}));
}

// -M, -MM and -MMD change what depend mode is told (system headers left
// out) or what is compiled: not keyed. -MD, -MF and friends are harmless.
TEST(ParseOptionsTest, DependencyOptionsThatHideSystemHeadersAreUnkeyable) {
  for (const char* options : {"-MMD", "-MM", "-M"}) {
    EXPECT_FALSE(unkeyable(options, Dialect::kGcc).empty()) << options;
    EXPECT_FALSE(unkeyable(options, Dialect::kNvcc).empty()) << options;
  }
  EXPECT_TRUE(unkeyable("-MD -MP -MF deps.d -MT x.o", Dialect::kGcc).empty());
}

TEST(ParseOptionsTest, LongMacroFormsAreMacros) {
  // --define-macro is -D: it is spelled so and ordered with the others.
  EXPECT_EQ(canonical({"--define-macro=A", "-UA"}, Dialect::kNvrtc), (Tokens{"-DA", "-UA"}));
  EXPECT_NE(canonical({"-UA", "--define-macro=A"}, Dialect::kNvrtc),
            canonical({"--define-macro=A", "-UA"}, Dialect::kNvrtc));
  EXPECT_EQ(canonical({"--define-macro", "B=1", "--undefine-macro=C"}, Dialect::kNvrtc),
            (Tokens{"-DB=1", "-UC"}));
}

TEST(ParseOptionsTest, KeepsIncludeOrder) {
  EXPECT_NE(canonical({"-Ia", "-Ib"}), canonical({"-Ib", "-Ia"}));
}

TEST(ParseOptionsTest, NamesEveryIncludeFolderAndFile) {
  auto parsed = parse_options(Tokens{"-I", "a", "-iquote", "q", "-isystems", "-idirafter", "z",
                                     "-include", "f.h", "-imacros", "m.h", "-Ib"},
                              Dialect::kGcc);
  ASSERT_TRUE(parsed.is_ok());
  ASSERT_EQ(parsed->paths.size(), 7u);
  EXPECT_EQ(parsed->paths[0].role, OptionRole::kIncludeDir);
  EXPECT_EQ(parsed->paths[1].role, OptionRole::kQuoteDir);
  EXPECT_EQ(parsed->paths[2].path, "s");
  EXPECT_EQ(parsed->paths[3].role, OptionRole::kAfterDir);
  EXPECT_EQ(parsed->paths[4].role, OptionRole::kForcedInclude);
  EXPECT_EQ(parsed->paths[5].role, OptionRole::kMacrosFile);
  EXPECT_EQ(parsed->paths[6].path, "b");
  EXPECT_TRUE(parsed->unkeyable.empty()) << parsed->unkeyable;
  // The compiler gets the canonical spelling of each.
  EXPECT_EQ(parsed->tokens, (Tokens{"-Ia", "-iquote", "q", "-isystem", "s", "-idirafter", "z",
                                    "-include", "f.h", "-imacros", "m.h", "-Ib"}));

  auto nvrtc = parse_options(Tokens{"--include-path", "a", "--pre-include=f.h", "-include", "g.h"},
                             Dialect::kNvrtc);
  ASSERT_TRUE(nvrtc.is_ok());
  ASSERT_EQ(nvrtc->paths.size(), 3u);
  EXPECT_EQ(nvrtc->tokens, (Tokens{"-Ia", "--pre-include=f.h", "--pre-include=g.h"}));
}

TEST(ParseOptionsTest, OptionsThatReadWhatKcacheCannotKeyAreUnkeyable) {
  for (const char* options :
       {"-fplugin=./p.so", "-include-pch x.pch", "@args.rsp", "kernel.cl", "-Wp,-include,x.h",
        "-fprofile-use=/p", "--sysroot=/r", "-B/bin", "-isystem=/sys"}) {
    EXPECT_FALSE(unkeyable(options, Dialect::kGcc).empty()) << options;
  }
  EXPECT_FALSE(unkeyable("--use-pch=a.pch", Dialect::kNvrtc).empty());
  EXPECT_FALSE(unkeyable("-Xcompiler -I/x", Dialect::kNvcc).empty());
  // Unknown options are judged by their shape: a path in them, or a stray
  // word (a value kcache cannot attach to an option), is unkeyable.
  EXPECT_FALSE(unkeyable("--frobnicate=/etc/x", Dialect::kOpenCl).empty());
  EXPECT_FALSE(unkeyable("--frobnicate value", Dialect::kGeneric).empty());
  EXPECT_TRUE(unkeyable("--frobnicate", Dialect::kGeneric).empty());
  // Families and known flags are harmless.
  for (const char* options : {"-O3 -Wall -ffast-math -march=native -std=c++17 -g -x cl", "-w"}) {
    EXPECT_TRUE(unkeyable(options, Dialect::kGcc).empty()) << options;
  }
  EXPECT_TRUE(unkeyable("-arch sm_90 --use_fast_math -std=c++17 -G", Dialect::kNvrtc).empty());
  EXPECT_TRUE(unkeyable("-cl-fast-relaxed-math -cl-std=CL2.0 -w", Dialect::kOpenCl).empty());
  // An option declared harmless is kept as given.
  EXPECT_TRUE(unkeyable("--my-tool=/opt/x", Dialect::kGcc, {"--my-tool"}).empty());
}

TEST(ParseOptionsTest, AnOptionWithoutItsValueIsBadInput) {
  EXPECT_EQ(parse_options(Tokens{"-I"}, Dialect::kGcc).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_options(Tokens{"-include"}, Dialect::kGcc).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_options(Tokens{"-D"}, Dialect::kNvrtc).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ParseOptionsTest, NoSourceIncludeIsSeen) {
  auto parsed = parse_options(Tokens{"-no-source-include"}, Dialect::kNvrtc);
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_TRUE(parsed->no_source_include);
}

TEST(JoinOptionsTest, OnlyTokensThatNeedNoQuoting) {
  EXPECT_EQ(join_options({"-DA=1", "-Iinc"}), std::optional<std::string>("-DA=1 -Iinc"));
  EXPECT_EQ(join_options({}), std::optional<std::string>(""));
  for (const char* token : {"-DA=a b", "-DA='x'", "-DA=\"x\"", "-DA=\\x", ""}) {
    EXPECT_FALSE(join_options({token}).has_value()) << token;
  }
}

TEST(MacroNameTest, EndsAtParenthesisOrEquals) {
  EXPECT_EQ(macro_name("F(x)=x"), "F");
  EXPECT_EQ(macro_name("A=1"), "A");
  EXPECT_EQ(macro_name("B"), "B");
}

}  // namespace
}  // namespace kcache
