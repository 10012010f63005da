#include "core/options_normalizer.h"

#include <gtest/gtest.h>

namespace kcache {
namespace {

using Tokens = std::vector<std::string>;

TEST(SplitOptionsTest, ShellQuoting) {
  auto tokens = split_options("  -DA=1 -I 'my dir' \"-DB=x y\" -DC=\\\"q\\\"  ");
  ASSERT_TRUE(tokens.is_ok());
  EXPECT_EQ(*tokens, (Tokens{"-DA=1", "-I", "my dir", "-DB=x y", "-DC=\"q\""}));
  EXPECT_EQ(split_options("")->size(), 0u);
  EXPECT_FALSE(split_options("'open").is_ok());
  EXPECT_FALSE(split_options("\"open").is_ok());
  EXPECT_FALSE(split_options("trailing\\").is_ok());
}

TEST(NormalizeOptionsTest, JoinsSeparatedValuesAndSortsUniqueMacros) {
  Tokens a = normalize_options({"-O3", "-D", "B=2", "-I", "inc", "-DA=1"});
  Tokens b = normalize_options({"-DA=1", "-O3", "-Iinc", "-DB=2"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (Tokens{"-O3", "-Iinc", "-DA=1", "-DB=2"}));
}

TEST(NormalizeOptionsTest, KeepsOrderWhenAMacroRepeats) {
  // The last definition wins, so order matters here.
  Tokens a = normalize_options({"-DX=1", "-DX=2"});
  Tokens b = normalize_options({"-DX=2", "-DX=1"});
  EXPECT_NE(a, b);
  Tokens c = normalize_options({"-DX", "-UX"});
  EXPECT_EQ(c, (Tokens{"-DX", "-UX"}));
}

TEST(NormalizeOptionsTest, KeepsIncludeOrder) {
  EXPECT_NE(normalize_options({"-Ia", "-Ib"}), normalize_options({"-Ib", "-Ia"}));
}

TEST(NormalizeOptionsTest, IncludeDirs) {
  Tokens t = normalize_options({"-I", "a", "--include-path", "b", "--include-path=c", "-Id"});
  EXPECT_EQ(include_dirs_in(t), (Tokens{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace kcache
