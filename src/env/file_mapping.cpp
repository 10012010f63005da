#include "env/file_mapping.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "env/sigbus_guard.h"

namespace kcache {

Result<std::shared_ptr<FileMapping>> FileMapping::map_with(int fd, std::uint64_t length,
                                                           const std::string& path, bool writable) {
  if (length == 0 || length > SIZE_MAX) {
    return Status::not_supported("cannot map " + std::to_string(length) + " bytes of " + path);
  }
  const auto size = static_cast<std::size_t>(length);
  const int protection = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* data = ::mmap(nullptr, size, protection, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    return Status::io_error("cannot map " + path + ": " + std::strerror(errno));
  }
  const int slot = sigbus_guard::guard(data, size, writable);
  if (slot < 0) {
    ::munmap(data, size);
    return Status::not_supported("cannot guard a mapping of " + path + " against truncation");
  }
  return std::shared_ptr<FileMapping>(
      new FileMapping(static_cast<std::uint8_t*>(data), size, slot, writable));
}

Result<std::shared_ptr<const FileMapping>> FileMapping::map(int fd, std::uint64_t length,
                                                            const std::string& path) {
  auto mapped = map_with(fd, length, path, /*writable=*/false);
  if (!mapped) return mapped.status();
  return std::shared_ptr<const FileMapping>(std::move(*mapped));
}

Result<std::shared_ptr<FileMapping>> FileMapping::map_writable(int fd, std::uint64_t length,
                                                               const std::string& path) {
  return map_with(fd, length, path, /*writable=*/true);
}

FileMapping::~FileMapping() {
  sigbus_guard::release(slot_);
  ::munmap(data_, size_);
}

bool FileMapping::damaged() const { return sigbus_guard::damaged(slot_); }

}  // namespace kcache
