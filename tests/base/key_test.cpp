#include <kcache/key.h>

#include <gtest/gtest.h>

namespace kcache {
namespace {

TEST(TargetTest, ParsesArchAndUnits) {
  auto sm90 = Target::parse("sm_90");
  ASSERT_TRUE(sm90.is_ok());
  EXPECT_EQ(sm90->arch, "sm_90");
  EXPECT_EQ(sm90->units, 0);
  EXPECT_EQ(sm90->db_basename(), "sm_90");

  auto sm90_132 = Target::parse("sm_90_132");
  ASSERT_TRUE(sm90_132.is_ok());
  EXPECT_EQ(sm90_132->arch, "sm_90");
  EXPECT_EQ(sm90_132->units, 132);
  EXPECT_EQ(sm90_132->db_basename(), "sm_90_132");
  EXPECT_EQ(sm90_132->arch_basename(), "sm_90");

  auto gfx = Target::parse("gfx906_60");
  ASSERT_TRUE(gfx.is_ok());
  EXPECT_EQ(gfx->arch, "gfx906");
  EXPECT_EQ(gfx->units, 60);
}

TEST(TargetTest, FeaturesAreCanonical) {
  auto a = Target::parse("gfx90a:xnack-:sramecc+");
  auto b = Target::parse("gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->features, "sramecc+:xnack-");
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->id(), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(a->db_basename(), "gfx90a");
}

TEST(TargetTest, ToStringRoundTrips) {
  for (const char* text : {"sm_90", "sm_90_132", "gfx90a_110:sramecc+:xnack-", "gfx906:xnack+"}) {
    auto target = Target::parse(text);
    ASSERT_TRUE(target.is_ok()) << text;
    EXPECT_EQ(target->to_string(), text);
    EXPECT_EQ(*Target::parse(target->to_string()), *target);
  }
}

// Found by fuzz_config: "1000sm00_90_0" parsed as arch "1000sm00_90" with 0
// units, whose to_string() ("1000sm00_90") reads back as 90 units.
TEST(TargetTest, ZeroUnitsAfterAnArchThatEndsInAUnitCountIsRefused) {
  for (const char* text : {"gfx906_60_0", "1000sm00_90_0", "x1_5_00"}) {
    EXPECT_EQ(Target::parse(text).status().code(), StatusCode::kInvalidArgument) << text;
  }
  // A zero count is still fine where it leaves no doubt.
  for (const char* text : {"gfx906_0", "sm_90_0", "x1_5_7"}) {
    auto target = Target::parse(text);
    ASSERT_TRUE(target.is_ok()) << text;
    EXPECT_EQ(*Target::parse(target->to_string()), *target) << text;
  }
}

TEST(TargetTest, UnitsAreDecimalInNames) {
  // MIOpen wrote CU counts in hex ("gfx90a_6e") and missed its own files.
  Target t{"gfx90a", "", 110};
  EXPECT_EQ(t.db_basename(), "gfx90a_110");
}

TEST(TargetTest, RejectsMalformed) {
  EXPECT_FALSE(Target::parse("").is_ok());
  EXPECT_FALSE(Target::parse("../etc").is_ok());
  // An arch names its database file: not "." or "..", nor a hidden name.
  for (const char* dots : {".", "..", ".hidden", "._60"}) {
    EXPECT_FALSE(Target::parse(dots).is_ok()) << dots;
  }
  EXPECT_TRUE(Target::parse("gfx906.x").is_ok());
  EXPECT_FALSE(Target::parse("gfx906:xnack").is_ok());
  EXPECT_FALSE(Target::parse("gfx906:").is_ok());
  EXPECT_FALSE(Target::parse("a b").is_ok());
  EXPECT_EQ(Target::parse("sm_90/x").status().code(), StatusCode::kInvalidArgument);
}

TEST(CacheKeyTest, HexRoundTrip) {
  CacheKey::Bytes bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7);
  CacheKey key(bytes);
  auto parsed = CacheKey::from_hex(key.hex());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, key);
  EXPECT_EQ(CacheKey::from_hex(std::string(32, 'A'))->hex(), std::string(32, 'a'));
  EXPECT_FALSE(CacheKey::from_hex("abc").has_value());
  EXPECT_FALSE(CacheKey::from_hex(std::string(32, 'g')).has_value());
}

TEST(KeyMaterialTest, SerializeParseRoundTripWithEscapes) {
  KeyMaterial material({{"a", "plain"}, {"b", "line\nbreak\\back\rslash"}, {"c", ""}});
  std::string text = material.serialize();
  EXPECT_EQ(text, "a plain\nb line\\nbreak\\\\back\\rslash\nc \n");
  auto parsed = KeyMaterial::parse(text);
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_EQ(*parsed, material);
  EXPECT_EQ(parsed->digest(), material.digest());
}

TEST(KeyMaterialTest, ParseRejectsMalformed) {
  EXPECT_FALSE(KeyMaterial::parse("no-newline").is_ok());
  EXPECT_FALSE(KeyMaterial::parse("noval\n").is_ok());
  EXPECT_FALSE(KeyMaterial::parse("a bad\\q\n").is_ok());
  EXPECT_FALSE(KeyMaterial::parse("a dangling\\\n").is_ok());
}

}  // namespace
}  // namespace kcache
