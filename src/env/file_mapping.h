// A read-only mapping of the start of an open file, guarded against the
// file being truncated beneath it (env/sigbus_guard.h): a lost page reads
// as zeros and the mapping says it is damaged. Views of it may be lent
// out while a shared_ptr to it is held (docs/design.md §3.2). A writable one
// holds the user tier's use tables (store/user/use_table.h).
#pragma once

#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/byte_buffer.h"

namespace kcache {

class FileMapping {
 public:
  // Maps bytes [0, length) of the open file `fd` (which may be closed
  // afterwards); `path` names it in errors. kNotSupported when the range
  // cannot be guarded (then the caller reads the file instead).
  static Result<std::shared_ptr<const FileMapping>> map(int fd, std::uint64_t length,
                                                        const std::string& path);
  // The same, mapped shared for writing too (`fd` open for reading and
  // writing): stores reach the file and every process that maps it. A
  // page lost to a truncation becomes a private page of zeros.
  static Result<std::shared_ptr<FileMapping>> map_writable(int fd, std::uint64_t length,
                                                           const std::string& path);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  [[nodiscard]] std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  // The bytes, for writing; empty unless mapped by map_writable().
  [[nodiscard]] std::span<std::uint8_t> writable_bytes() {
    return writable_ ? std::span<std::uint8_t>(data_, size_) : std::span<std::uint8_t>();
  }
  // Whether a page was lost to a truncation and reads as zeros.
  [[nodiscard]] bool damaged() const;

 private:
  FileMapping(std::uint8_t* data, std::size_t size, int slot, bool writable)
      : data_(data), size_(size), slot_(slot), writable_(writable) {}
  static Result<std::shared_ptr<FileMapping>> map_with(int fd, std::uint64_t length,
                                                       const std::string& path, bool writable);
  std::uint8_t* data_;
  std::size_t size_;
  int slot_;  // in sigbus_guard's table
  bool writable_;
};

// Bytes [offset, offset + size) of `mapping`, which the caller has checked
// lie within it, lent as a buffer that keeps the mapping alive.
inline ByteBuffer view_of(const std::shared_ptr<const FileMapping>& mapping, std::uint64_t offset,
                          std::size_t size) {
  auto* first = const_cast<std::uint8_t*>(mapping->bytes().data() + offset);
  ByteBuffer view;
  view.data = std::shared_ptr<std::uint8_t[]>(mapping, first);  // shares the mapping's life
  view.size = size;
  return view;
}

}  // namespace kcache
