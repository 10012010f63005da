// A file descriptor owned by one object: closed when it dies. Movable.
// Header-only, so the command-line tool can use it too.
#pragma once

#include <unistd.h>

#include <utility>

namespace kcache {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  // Gives the descriptor up, unclosed.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace kcache
