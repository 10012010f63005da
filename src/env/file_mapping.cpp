#include "env/file_mapping.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "env/sigbus_guard.h"

namespace kcache {

Result<std::shared_ptr<const FileMapping>> FileMapping::map(int fd, std::uint64_t length,
                                                            const std::string& path) {
  if (length == 0 || length > SIZE_MAX) {
    return Status::not_supported("cannot map " + std::to_string(length) + " bytes of " + path);
  }
  const auto size = static_cast<std::size_t>(length);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    return Status::io_error("cannot map " + path + ": " + std::strerror(errno));
  }
  const int slot = sigbus_guard::guard(data, size);
  if (slot < 0) {
    ::munmap(data, size);
    return Status::not_supported("cannot guard a mapping of " + path + " against truncation");
  }
  return std::shared_ptr<const FileMapping>(
      new FileMapping(static_cast<const std::uint8_t*>(data), size, slot));
}

FileMapping::~FileMapping() {
  sigbus_guard::release(slot_);
  ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

bool FileMapping::damaged() const { return sigbus_guard::damaged(slot_); }

}  // namespace kcache
