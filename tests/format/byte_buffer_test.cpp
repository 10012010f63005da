#include "format/byte_buffer.h"

#include <gtest/gtest.h>

namespace kcache {
namespace {

TEST(ByteBufferTest, SmallBuffersHoldTheirSize) {
  ByteBuffer empty = ByteBuffer::allocate(0);
  EXPECT_EQ(empty.size, 0u);
  EXPECT_NE(empty.data, nullptr);
  ByteBuffer copy = ByteBuffer::copy_of(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>("abc"), 3));
  EXPECT_EQ(std::string(copy.span().begin(), copy.span().end()), "abc");
}

// A released large buffer is handed out again (its pages are already
// mapped), to any request of the same size class.
TEST(ByteBufferTest, LargeBuffersAreReused) {
  std::uint8_t* first = nullptr;
  {
    ByteBuffer buffer = ByteBuffer::allocate(140000);
    first = buffer.data.get();
    buffer.mutable_span().back() = 7;
  }
  ByteBuffer again = ByteBuffer::allocate(200000);  // same 256 KiB class
  EXPECT_EQ(again.data.get(), first);
  EXPECT_EQ(again.size, 200000u);
  ByteBuffer other = ByteBuffer::allocate(140000);  // the class is empty now
  EXPECT_NE(other.data.get(), first);
}

TEST(ByteBufferTest, SharedOwnersKeepTheBuffer) {
  ByteBuffer buffer = ByteBuffer::allocate(70000);
  std::shared_ptr<std::uint8_t[]> owner = buffer.data;
  std::uint8_t* raw = buffer.data.get();
  buffer = ByteBuffer::allocate(70000);  // must not get `raw` while `owner` holds it
  EXPECT_NE(buffer.data.get(), raw);
  owner.reset();
}

}  // namespace
}  // namespace kcache
