#include "sign/ed25519.h"

#include <gtest/gtest.h>

#include <string_view>

namespace kcache {
namespace {

std::span<const std::uint8_t> bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

TEST(Ed25519Test, LibsodiumIsThere) {
  EXPECT_TRUE(ed25519_available().is_ok()) << ed25519_available().to_string();
}

TEST(Ed25519Test, ASignatureHoldsForItsMessageAndKeyOnly) {
  auto pair = ed25519_generate();
  ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
  auto other = ed25519_generate();
  ASSERT_TRUE(other.is_ok());
  EXPECT_NE(pair->public_key, other->public_key);
  EXPECT_EQ(ed25519_public_of(pair->secret_key), pair->public_key);

  auto signature = ed25519_sign(bytes_of("the package"), pair->secret_key);
  ASSERT_TRUE(signature.is_ok());
  EXPECT_EQ(ed25519_verify(bytes_of("the package"), *signature, pair->public_key).value(), true);
  EXPECT_EQ(ed25519_verify(bytes_of("the packagE"), *signature, pair->public_key).value(), false);
  EXPECT_EQ(ed25519_verify(bytes_of("the package"), *signature, other->public_key).value(), false);
  Ed25519Signature altered = *signature;
  altered[10] ^= 1;
  EXPECT_EQ(ed25519_verify(bytes_of("the package"), altered, pair->public_key).value(), false);
}

}  // namespace
}  // namespace kcache
