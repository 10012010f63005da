#include "store/system/compiler_fits.h"

#include <gtest/gtest.h>

#include "format/entry.h"
#include "format/key_schema.h"
#include "store/system/package_fit.h"

namespace kcache {
namespace {

const CompilerIdentity kPacker{"opencl", "PoCL | cpu", "3.1 | build sha256:aa"};

Fields packed_by(const CompilerIdentity& compiler) {
  return {{"db", "cpu_4"},
          {"key_format", std::to_string(kKeySchemaVersion)},
          {"entry_format", std::to_string(kEntryFormatVersion)},
          {"compiler", identity_text(compiler)}};
}

CompilerIdentity other_build(int n) {
  return {"opencl", "PoCL | cpu", "3.1 | build sha256:b" + std::to_string(n)};
}

TEST(CompilerFitsTest, ThePackersCompilerIsServedAndNothingIsToBeSaid) {
  const CompilerFits fits;
  const auto answer = fits.ask(packed_by(kPacker), "cpu_4", kPacker);
  EXPECT_TRUE(answer.serves);
  EXPECT_EQ(answer.unsaid_reason, std::nullopt);
  EXPECT_TRUE(fits.serves(packed_by(kPacker), "cpu_4", kPacker));
}

TEST(CompilerFitsTest, ACompilerNotServedIsToBeSaidOnce) {
  const CompilerFits fits;
  const Fields metadata = packed_by(kPacker);
  const auto first = fits.ask(metadata, "cpu_4", other_build(1));
  EXPECT_FALSE(first.serves);
  EXPECT_EQ(first.unsaid_reason, unfit_reason(metadata, "cpu_4", other_build(1)));
  const auto again = fits.ask(metadata, "cpu_4", other_build(1));
  EXPECT_FALSE(again.serves);
  EXPECT_EQ(again.unsaid_reason, std::nullopt);
  EXPECT_FALSE(fits.serves(metadata, "cpu_4", other_build(1)));
}

// Four identities are remembered, most recently decided first (one asked
// again keeps its place): the oldest, pushed out by a fifth, is decided,
// and said, anew.
TEST(CompilerFitsTest, FourCompilersAreRemembered) {
  const CompilerFits fits;
  const Fields metadata = packed_by(kPacker);
  for (int n = 0; n <= 3; ++n) {
    ASSERT_TRUE(fits.ask(metadata, "cpu_4", other_build(n)).unsaid_reason) << n;
  }
  EXPECT_FALSE(fits.ask(metadata, "cpu_4", other_build(0)).unsaid_reason);  // still known
  ASSERT_TRUE(fits.ask(metadata, "cpu_4", other_build(4)).unsaid_reason);
  EXPECT_TRUE(fits.ask(metadata, "cpu_4", other_build(0)).unsaid_reason);  // pushed out
  EXPECT_FALSE(fits.ask(metadata, "cpu_4", other_build(3)).unsaid_reason);
}

}  // namespace
}  // namespace kcache
