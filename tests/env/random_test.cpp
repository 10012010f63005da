// Random bits from the kernel: every call new bits, all of the buffer
// written.
#include "env/random.h"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace kcache {
namespace {

TEST(RandomTest, FillsTheWholeBufferWithNewBits) {
  std::array<std::uint8_t, 64> first{};
  std::array<std::uint8_t, 64> second{};
  ASSERT_TRUE(random_bytes(first));
  ASSERT_TRUE(random_bytes(second));
  EXPECT_NE(first, second);
  // 64 zero bytes from getrandom: 2^-512.
  EXPECT_NE(first, (std::array<std::uint8_t, 64>{}));
  EXPECT_TRUE(random_bytes({}));  // nothing asked, nothing to fail
}

TEST(RandomTest, NumbersDoNotRepeat) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(random_u64());
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace kcache
