#include "inputs/directives.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kcache {
namespace {

using Kind = IncludeDirective::Kind;

std::vector<std::string> names(const SourceDirectives& found) {
  std::vector<std::string> out;
  for (const auto& include : found.includes) {
    out.push_back((include.quoted ? "\"" : "<") + include.name + (include.quoted ? "\"" : ">"));
  }
  return out;
}

bool has(const SourceDirectives& found, const std::string& name) {
  for (const auto& include : found.includes) {
    if (include.name == name) return true;
  }
  return false;
}

TEST(DirectivesTest, PlainIncludes) {
  auto found = find_directives("#include \"a.h\"\n  #  include <b/c.h>\nint x;\n#import \"d.h\"\n");
  EXPECT_EQ(names(found), (std::vector<std::string>{"\"a.h\"", "<b/c.h>", "\"d.h\""}));
  EXPECT_FALSE(found.uncertain);
}

// The routes of audit K11: what the preprocessor reads as a directive is one.
TEST(DirectivesTest, CommentsSplicesAndDigraphs) {
  EXPECT_TRUE(has(find_directives("/* c */ #include \"x.h\"\n"), "x.h"));
  EXPECT_TRUE(has(find_directives("#/**/include \"x.h\"\n"), "x.h"));
  EXPECT_TRUE(has(find_directives("#inc\\\nlude \"y.h\"\n"), "y.h"));
  EXPECT_TRUE(has(find_directives("#include \\\n\"y2.h\"\n"), "y2.h"));
  EXPECT_TRUE(has(find_directives("#inc\\  \r\nlude \"y3.h\"\n"), "y3.h"));
  EXPECT_TRUE(has(find_directives("%:include \"z.h\"\n"), "z.h"));
  EXPECT_TRUE(has(find_directives("/* a\n b */ #include \"w.h\"\n"), "w.h"));
  EXPECT_TRUE(has(find_directives("#include_next <n.h>\n"), "n.h"));
  EXPECT_TRUE(has(find_directives("#embed \"data.bin\"\n"), "data.bin"));
}

// Lexing must not hide a directive: a comment opener inside a string is
// text, a directive after a raw string counts, and a literal ends at the
// end of its line.
TEST(DirectivesTest, LiteralsDoNotHideDirectives) {
  EXPECT_TRUE(has(find_directives("const char* s = \"/*\";\n#include \"a.h\"\n// */\n"), "a.h"));
  EXPECT_TRUE(has(find_directives("char c = '\"';\n#include \"b.h\"\n"), "b.h"));
  EXPECT_TRUE(has(find_directives("auto r = R\"x(/* \n )\" )x\";\n#include \"c.h\"\n"), "c.h"));
  EXPECT_TRUE(has(find_directives("#error don't\n#include \"d.h\"\n"), "d.h"));
  EXPECT_TRUE(has(find_directives("int n = 1'000;\n#include \"e.h\"\n"), "e.h"));
}

// What the review of issue 10 found: a "/*" in a #define's string opened a
// comment that hid the next lines; a raw string read in C (which has
// none) hid them too; a #define body that tests for a header was not read.
TEST(DirectivesTest, DirectiveLinesAndRawStringsHideNothing) {
  EXPECT_TRUE(has(find_directives("#define X \"/*\"\n%:include \"y.h\"\n// */\n"), "y.h"));
  EXPECT_TRUE(has(find_directives("#define X '/*'\n#include \"y2.h\"\n// */\n"), "y2.h"));
  EXPECT_TRUE(has(find_directives("char s[] = R\"(\";\n%:include \"c.h\"\n//)\";\n"), "c.h"));
  auto tested = find_directives("#define HAS __has_include(\"opt.h\")\n#if HAS\n#endif\n");
  EXPECT_TRUE(has(tested, "opt.h"));
  // Lines the lexer might misread are read again alone: a directive after
  // a comment, through a digraph, or through a macro.
  auto lines = find_directives("/* x */ # /* y */ include \"l.h\"\n#include MACRO // z\n");
  EXPECT_TRUE(has(lines, "l.h"));
  EXPECT_TRUE(std::any_of(lines.includes.begin(), lines.includes.end(),
                          [](const IncludeDirective& d) { return d.expression == "MACRO"; }));
}

// A commented-out include is still reported (the second opinion reads
// every literal #include line): an extra header in the key, never a
// missing one.
TEST(DirectivesTest, CommentedIncludesAreASuperset) {
  auto found = find_directives("/*\n#include \"old.h\"\n*/\n");
  EXPECT_TRUE(has(found, "old.h"));
  // Not in a directive position: not an include.
  EXPECT_FALSE(has(find_directives("int x; #include \"no.h\"\n"), "no.h"));
}

TEST(DirectivesTest, ComputedIncludesAndMacros) {
  auto found = find_directives("#define H \"x.h\"\n#define F(a) a\n#include H /* c */\n");
  ASSERT_EQ(found.includes.size(), 1u);
  EXPECT_TRUE(found.includes[0].computed());
  EXPECT_EQ(found.includes[0].expression, "H");
  ASSERT_EQ(found.defines.size(), 1u);
  EXPECT_EQ(found.defines[0].name, "H");
  EXPECT_EQ(found.defines[0].value, "\"x.h\"");
  ASSERT_EQ(found.function_macros.size(), 1u);
  EXPECT_EQ(found.function_macros[0].name, "F");
  EXPECT_EQ(found.function_macros[0].params, (std::vector<std::string>{"a"}));
  EXPECT_EQ(found.function_macros[0].body, "a");
}

TEST(DirectivesTest, FunctionMacrosKeepTheirParametersAndBody) {
  auto found = find_directives(
      "#define F( a , b ) a + b /* c */\n#define V(...) f(__VA_ARGS__)\n"
      "#define G(x, rest...) x\n");
  ASSERT_EQ(found.function_macros.size(), 3u);
  EXPECT_EQ(found.function_macros[0].params, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(found.function_macros[0].body, "a + b");
  EXPECT_FALSE(found.function_macros[0].variadic);
  EXPECT_EQ(found.function_macros[1].params, (std::vector<std::string>{"__VA_ARGS__"}));
  EXPECT_TRUE(found.function_macros[1].variadic);
  EXPECT_EQ(found.function_macros[2].params, (std::vector<std::string>{"x", "rest"}));
  EXPECT_TRUE(found.function_macros[2].variadic);
}

// CCCL's `#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)`: the body tests
// for whatever a call passes, not for a header named _X; the calls in #if
// lines (and in object-like macros) are what the scanner follows.
TEST(DirectivesTest, AMacroThatWrapsHasIncludeIsCalledNotIncluded) {
  auto found = find_directives(
      "#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)\n"
      "#if _CCCL_HAS_INCLUDE(<cuda_fp16.h>) && \\\n  _CCCL_HAS_CTK() || defined(X)\n#endif\n"
      "#define HAS_BF16 _CCCL_HAS_INCLUDE(<cuda_bf16.h>)\n"
      "#define PATH(x) __has_include(<x.h>)\n#define LIT(x) __has_include(\"lit.h\")\n");
  for (const auto& include : found.includes) {
    EXPECT_FALSE(include.computed()) << include.expression;
    EXPECT_NE(include.name, "x.h");  // a parameter, replaced by what a call passes
  }
  EXPECT_TRUE(has(found, "lit.h"));  // no parameter is replaced in a literal
  std::vector<std::string> calls;
  for (const auto& call : found.calls) {
    calls.push_back(call.name + "(" + (call.arguments.empty() ? "" : call.arguments[0]) + ")");
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"_CCCL_HAS_INCLUDE(<cuda_fp16.h>)", "_CCCL_HAS_CTK()",
                                             "_CCCL_HAS_INCLUDE(<cuda_bf16.h>)"}));
}

TEST(DirectivesTest, MacroCallsAndTheirArguments) {
  auto found = find_macro_calls("A(B(<x.h>), \"a,)\", (c, d)) && defined(Z) && C ( ) && 'x'(");
  ASSERT_TRUE(found.has_value());
  const auto& calls = *found;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].name, "A");
  EXPECT_EQ(calls[0].arguments, (std::vector<std::string>{"B(<x.h>)", "\"a,)\"", "(c, d)"}));
  EXPECT_EQ(calls[1].name, "B");
  EXPECT_EQ(calls[1].arguments, (std::vector<std::string>{"<x.h>"}));
  EXPECT_EQ(calls[2].name, "C");
  EXPECT_TRUE(calls[2].arguments.empty());
  // Nesting deeper than kcache follows is said, never guessed (nor slow).
  EXPECT_FALSE(find_macro_calls(std::string(100000, '(')).has_value());
  EXPECT_FALSE(find_directives("#if " + std::string(300, 'f') + "\n").uncertain);
  std::string deep = "#if ";
  for (int i = 0; i < 300; ++i) deep += "F(";
  EXPECT_TRUE(find_directives(deep + "\n").uncertain);
  EXPECT_TRUE(mentions_any("<x.h>", {"x"}));
  EXPECT_FALSE(mentions_any("\"x.h\" xy", {"x"}));
}

TEST(DirectivesTest, HasInclude) {
  auto found = find_directives("#if __has_include(\"opt.h\") && __has_include(<sys.h>)\n#endif\n");
  ASSERT_EQ(found.includes.size(), 2u);
  EXPECT_EQ(found.includes[0].kind, Kind::kHasInclude);
  EXPECT_EQ(found.includes[0].name, "opt.h");
  EXPECT_FALSE(found.includes[1].quoted);
  auto computed = find_directives("#if __has_include(HDR)\n#endif\n");
  ASSERT_EQ(computed.includes.size(), 1u);
  EXPECT_TRUE(computed.includes[0].computed());
}

TEST(DirectivesTest, TrigraphsMakeTheListUncertain) {
  EXPECT_TRUE(find_directives("?"
                              "?=include \"t.h\"\n")
                  .uncertain);
  EXPECT_TRUE(find_directives("int a; ?"
                              "?/\n")
                  .uncertain);
  EXPECT_FALSE(find_directives("x ?? y\n").uncertain);
}

TEST(DirectivesTest, MayReadFiles) {
  EXPECT_FALSE(may_read_files("kernel void k() {}"));
  EXPECT_TRUE(may_read_files("#include <a>"));
  EXPECT_TRUE(may_read_files("#inc\\\nlude <a>"));
  EXPECT_TRUE(
      may_read_files("?"
                     "?=import"));
}

}  // namespace
}  // namespace kcache
