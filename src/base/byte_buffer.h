// A shared byte buffer, allocated without zeroing so that reading a file
// into it costs only the read. Buffers of 4 KiB and more come from a small
// process-wide pool and go back to it when released: a fresh allocation
// faults its pages in on first touch, which on a VM costs more than the
// read itself (measured on the H200 machine: 80 us for a fresh 140 KB
// mmap; 2-3 us for an 11 KB buffer from a heap that the CUDA driver's
// module load had just shrunk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace kcache {

// A buffer may also be a read-only view of a mapped package (KdbReader::
// view): write only through buffers you allocated.
struct ByteBuffer {
  std::shared_ptr<std::uint8_t[]> data;
  std::size_t size = 0;
  std::size_t block = 0;  // bytes `data` holds: a pooled block may be larger than `size`

  // What keeping this buffer costs in memory.
  [[nodiscard]] std::size_t footprint() const { return block > size ? block : size; }

  static ByteBuffer allocate(std::size_t n);
  static ByteBuffer copy_of(std::span<const std::uint8_t> bytes) {
    ByteBuffer buffer = allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(buffer.data.get(), bytes.data(), bytes.size());
    return buffer;
  }
  [[nodiscard]] std::span<const std::uint8_t> span() const { return {data.get(), size}; }
  [[nodiscard]] std::span<std::uint8_t> mutable_span() { return {data.get(), size}; }
};

// Text that either owns its string or lives inside a shared buffer (an
// entry's key material, read from disk with the rest of the entry): a copy
// shares the bytes instead of copying them.
class SharedText {
 public:
  SharedText() = default;
  // Takes `text` over.
  SharedText(std::string text)  // NOLINT(google-explicit-constructor): assigned like a string
      : SharedText(std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT
  // `text`, which stays valid while `owner` lives.
  SharedText(std::shared_ptr<const void> owner, std::string_view text)
      : owner_(std::move(owner)), text_(text) {}

  [[nodiscard]] std::string_view view() const { return text_; }
  operator std::string_view() const { return text_; }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] const char* data() const { return text_.data(); }
  [[nodiscard]] std::size_t size() const { return text_.size(); }
  [[nodiscard]] bool empty() const { return text_.empty(); }
  [[nodiscard]] bool starts_with(std::string_view prefix) const {
    return text_.starts_with(prefix);
  }
  // Whether the text lives in the buffer at `data` (and costs no memory
  // of its own).
  [[nodiscard]] bool inside(const std::shared_ptr<std::uint8_t[]>& data) const {
    return owner_ != nullptr && owner_.get() == static_cast<const void*>(data.get());
  }

  friend bool operator==(const SharedText& a, const SharedText& b) { return a.text_ == b.text_; }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.text_ == b; }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.text_ == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.text_ == b; }
  friend std::ostream& operator<<(std::ostream& out, const SharedText& text);

 private:
  explicit SharedText(std::shared_ptr<const std::string> text) : owner_(text), text_(*text) {}

  std::shared_ptr<const void> owner_;
  std::string_view text_;
};

}  // namespace kcache
