#include "base/byte_buffer.h"

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define KCACHE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KCACHE_TEST_ASAN 1
#endif
#endif
#if defined(KCACHE_TEST_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace kcache {
namespace {

TEST(ByteBufferTest, SmallBuffersHoldTheirSize) {
  ByteBuffer empty = ByteBuffer::allocate(0);
  EXPECT_EQ(empty.size, 0u);
  EXPECT_EQ(ByteBuffer::allocate(100).footprint(), 100u);
  EXPECT_NE(empty.data, nullptr);
  ByteBuffer copy = ByteBuffer::copy_of(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>("abc"), 3));
  EXPECT_EQ(std::string(copy.span().begin(), copy.span().end()), "abc");
}

// A released buffer is handed out again (its pages are already mapped), to
// any request of the same size class: an entry of a few KiB as well as a
// large one.
TEST(ByteBufferTest, SmallBuffersAreReused) {
  std::uint8_t* first = nullptr;
  {
    ByteBuffer buffer = ByteBuffer::allocate(11000);
    EXPECT_EQ(buffer.size, 11000u);
    EXPECT_EQ(buffer.footprint(), 16384u);  // what the memory tier charges for it
    first = buffer.data.get();
    buffer.mutable_span().back() = 7;
  }
  ByteBuffer again = ByteBuffer::allocate(9000);  // same 16 KiB class
  EXPECT_EQ(again.data.get(), first);
  ByteBuffer other = ByteBuffer::allocate(11000);  // the class is empty now
  EXPECT_NE(other.data.get(), first);
}

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

// Under ASan, what lies past a pooled buffer's size, and a buffer back in
// the pool, are poisoned: an over-read or a use after release is reported
// as it would be for a buffer of its own.
TEST(ByteBufferTest, PooledBytesOutsideABufferArePoisoned) {
#if defined(KCACHE_TEST_ASAN)
  std::uint8_t* raw = nullptr;
  {
    ByteBuffer buffer = ByteBuffer::allocate(5000);  // an 8 KiB block
    raw = buffer.data.get();
    EXPECT_FALSE(__asan_address_is_poisoned(raw + 4999));
    EXPECT_TRUE(__asan_address_is_poisoned(raw + 5000));
    EXPECT_TRUE(__asan_address_is_poisoned(raw + 8191));
  }
  EXPECT_TRUE(__asan_address_is_poisoned(raw));  // back in the pool
  ByteBuffer again = ByteBuffer::allocate(6000);
  ASSERT_EQ(again.data.get(), raw);
  EXPECT_FALSE(__asan_address_is_poisoned(raw + 5999));
  EXPECT_TRUE(__asan_address_is_poisoned(raw + 6000));
#else
  GTEST_SKIP() << "built without AddressSanitizer";
#endif
}

TEST(ByteBufferTest, SharedOwnersKeepTheBuffer) {
  ByteBuffer buffer = ByteBuffer::allocate(70000);
  std::shared_ptr<std::uint8_t[]> owner = buffer.data;
  std::uint8_t* raw = buffer.data.get();
  buffer = ByteBuffer::allocate(70000);  // must not get `raw` while `owner` holds it
  EXPECT_NE(buffer.data.get(), raw);
  owner.reset();
}

// Copies of a SharedText share its bytes; one made from a string owns them.
TEST(SharedTextTest, CopiesShareTheBytes) {
  ByteBuffer buffer = ByteBuffer::copy_of(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>("key text"), 8));
  SharedText inside(buffer.data,
                    std::string_view(reinterpret_cast<const char*>(buffer.data.get()), 3));
  buffer = ByteBuffer();  // the text keeps its buffer alive
  SharedText copy = inside;
  EXPECT_EQ(copy.data(), inside.data());
  EXPECT_EQ(copy, "key");

  std::string text = "owned";
  SharedText owned = text;
  text[0] = 'X';
  EXPECT_EQ(owned, "owned");
  EXPECT_NE(owned, std::string("other"));
  EXPECT_TRUE(owned.starts_with("own"));
}

}  // namespace
}  // namespace kcache
