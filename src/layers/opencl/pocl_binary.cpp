#include "layers/opencl/pocl_binary.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace kcache::layer {
namespace {

constexpr std::size_t kHeaderSize = 77;
constexpr std::size_t kFolderAt = 36;
constexpr std::size_t kFolderSize = kHeaderSize - kFolderAt;
// PoCL's own bound on a binary it serializes (MAX_BINARY_SIZE).
constexpr std::size_t kMaxBinary = 256u << 20;

// Reads little-endian integers from a span, refusing to run past its end.
class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, std::size_t at) : bytes_(bytes), at_(at) {}

  template <class T>
  std::optional<T> next() {
    if (at_ > bytes_.size() || bytes_.size() - at_ < sizeof(T)) return std::nullopt;
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(static_cast<T>(bytes_[at_ + i]) << (8 * i));
    }
    at_ += sizeof(T);
    return value;
  }
  std::optional<std::string> text(std::size_t n) {
    if (at_ > bytes_.size() || bytes_.size() - at_ < n) return std::nullopt;
    std::string value(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return value;
  }
  bool skip(std::uint64_t n) {
    if (at_ > bytes_.size() || bytes_.size() - at_ < n) return false;
    at_ += n;
    return true;
  }
  [[nodiscard]] std::size_t at() const { return at_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_;
};

// A name PoCL makes for a folder or a kernel: letters, digits, '_', '-'.
bool plain_name(std::string_view name) {
  return !name.empty() && name.size() < 256 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// The file list at the end of a kernel record: [at, end) holds whole files.
std::optional<std::vector<std::string>> read_files(std::span<const std::uint8_t> binary,
                                                   std::size_t at, std::size_t end) {
  std::vector<std::string> paths;
  Reader r(binary.first(end), at);
  while (r.at() < end) {
    auto path_size = r.next<std::uint32_t>();
    if (!path_size) return std::nullopt;
    auto path = r.text(*path_size);
    auto content_size = r.next<std::uint32_t>();
    if (!path || !content_size || !r.skip(*content_size)) return std::nullopt;
    paths.push_back(std::move(*path));
  }
  return paths;
}

// The whole content of the regular file at `path` (not a link), at most
// `limit` bytes; nullopt otherwise.
std::optional<std::string> read_regular(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> content;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      static_cast<std::uint64_t>(st.st_size) <= limit) {
    std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    if (done == bytes.size()) content = std::move(bytes);
  }
  ::close(fd);
  return content;
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void add_to_u64(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t added) {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<std::uint64_t>(out[at + i]) << (8 * i);
  value += added;
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

}  // namespace

std::optional<PoclBinary> read_pocl_binary(std::span<const std::uint8_t> binary) {
  if (binary.size() < kHeaderSize || binary.size() > kMaxBinary ||
      std::memcmp(binary.data(), "poclbin\0", 8) != 0) {
    return std::nullopt;
  }
  Reader r(binary, 16);
  const auto version = r.next<std::uint32_t>();
  const auto count = r.next<std::uint32_t>();
  if (version != kPoclBinaryVersion || !count || *count == 0 || *count > 100000) {
    return std::nullopt;
  }
  PoclBinary layout;
  const char* folder = reinterpret_cast<const char*>(binary.data() + kFolderAt);
  layout.folder.assign(folder, strnlen(folder, kFolderSize));
  if (layout.folder.size() == kFolderSize || !plain_name(layout.folder)) return std::nullopt;

  Reader program(binary, kHeaderSize);
  const auto program_size = program.next<std::uint64_t>();
  if (!program_size || !program.skip(*program_size)) return std::nullopt;
  std::size_t at = program.at();
  for (std::uint32_t k = 0; k < *count; ++k) {
    Reader record(binary, at);
    const auto size = record.next<std::uint64_t>();
    const auto files_size = record.next<std::uint64_t>();
    const auto arginfo_size = record.next<std::uint32_t>();
    const auto name_size = record.next<std::uint32_t>();
    if (!size || !files_size || !arginfo_size || !name_size) return std::nullopt;
    auto name = record.text(*name_size);
    const std::size_t read = record.at() - at;
    if (!name || *size > binary.size() - at || *size < read || *files_size > *size - read) {
      return std::nullopt;
    }
    PoclKernelRecord kernel;
    kernel.name = std::move(*name);
    kernel.begin = at;
    kernel.end = at + *size;
    auto files = read_files(binary, kernel.end - *files_size, kernel.end);
    if (!files) return std::nullopt;
    kernel.files = std::move(*files);
    at = kernel.end;
    layout.kernels.push_back(std::move(kernel));
  }
  if (at != binary.size()) return std::nullopt;
  return layout;
}

std::optional<WorkGroupCode> with_work_group_code(std::span<const std::uint8_t> binary,
                                                  const std::string& pocl_dir) {
  auto layout = read_pocl_binary(binary);
  if (!layout) return std::nullopt;
  namespace fs = std::filesystem;
  const std::string program_dir = pocl_dir + "/" + layout->folder;
  WorkGroupCode out;
  out.binary.reserve(binary.size());
  std::size_t copied = 0;  // of `binary`, into out.binary
  std::size_t grown = 0;   // bytes added so far
  for (const PoclKernelRecord& kernel : layout->kernels) {
    if (!plain_name(kernel.name)) continue;
    std::vector<std::uint8_t> added;
    std::size_t files = 0;
    std::error_code error;
    for (const auto& dir : fs::directory_iterator(program_dir + "/" + kernel.name, error)) {
      const std::string sub = dir.path().filename().string();
      if (!plain_name(sub)) continue;
      const std::string path = "/" + kernel.name + "/" + sub + "/" + kernel.name + ".so";
      if (std::find(kernel.files.begin(), kernel.files.end(), path) != kernel.files.end()) continue;
      const std::size_t total = binary.size() + grown + added.size() + 8 + path.size();
      const std::size_t room = kMaxBinary - std::min(kMaxBinary, total);
      auto content = read_regular(program_dir + path, std::min<std::size_t>(room, 64u << 20));
      if (!content) continue;
      put_u32(added, static_cast<std::uint32_t>(path.size()));
      added.insert(added.end(), path.begin(), path.end());
      put_u32(added, static_cast<std::uint32_t>(content->size()));
      added.insert(added.end(), content->begin(), content->end());
      ++files;
    }
    if (files == 0) continue;
    // The record up to its end, then the files it gains; its two sizes grow.
    const std::size_t record_at = out.binary.size() + (kernel.begin - copied);
    out.binary.insert(out.binary.end(), binary.begin() + static_cast<std::ptrdiff_t>(copied),
                      binary.begin() + static_cast<std::ptrdiff_t>(kernel.end));
    copied = kernel.end;
    out.binary.insert(out.binary.end(), added.begin(), added.end());
    add_to_u64(out.binary, record_at, added.size());
    add_to_u64(out.binary, record_at + 8, added.size());
    grown += added.size();
    out.files += files;
  }
  if (out.files == 0) return std::nullopt;
  out.binary.insert(out.binary.end(), binary.begin() + static_cast<std::ptrdiff_t>(copied),
                    binary.end());
  return out;
}

}  // namespace kcache::layer
