#include "compiler/build_parts.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "base/hash.h"

namespace kcache {
namespace {

// Reads `size` bytes at `offset`, all or nothing.
bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) {
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return true;
}

// The build-id in one PT_NOTE segment's bytes, as hex; empty if none.
std::string build_id_in_notes(const std::vector<char>& notes) {
  constexpr auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  for (std::size_t at = 0; at + sizeof(Elf64_Nhdr) <= notes.size();) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes.data() + at, sizeof header);
    const std::size_t name_at = at + sizeof header;
    const std::size_t desc_at = name_at + align4(header.n_namesz);
    const std::size_t next = desc_at + align4(header.n_descsz);
    if (header.n_namesz > notes.size() || header.n_descsz > notes.size() || next > notes.size()) {
      break;
    }
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes.data() + name_at, "GNU", 4) == 0 && header.n_descsz > 0 &&
        header.n_descsz <= 64) {
      return to_hex(
          {reinterpret_cast<const std::uint8_t*>(notes.data() + desc_at), header.n_descsz});
    }
    at = next;
  }
  return {};
}

// "xxh3:<hex>" of the bytes of the file open as `fd`.
std::string content_hash(int fd) {
  Checksummer sum;
  std::vector<std::uint8_t> buffer(1 << 20);
  for (std::uint64_t offset = 0;;) {
    const ssize_t got = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (got < 0) return "unreadable";
    if (got == 0) break;
    sum.update({buffer.data(), static_cast<std::size_t>(got)});
    offset += static_cast<std::uint64_t>(got);
  }
  return "xxh3:" + to_hex(sum.finish());
}

// The folders a listing has entered, by device and inode: a link back to
// one (a loop) is not entered again.
using Entered = std::set<std::pair<dev_t, ino_t>>;

// Appends "<relative path> <size>" of every regular file under the folder
// open as `fd` (links followed, as the compiler follows them), at most
// kMaxFolderFiles in all, each folder entered once, at most 32 deep.
// One fstatat per entry, relative to its folder: no path is resolved from
// the root again (a toolkit's include folder has ~2,000 files).
void list_folder(int fd, const std::string& prefix, int depth, Entered& entered,
                 std::vector<std::string>& lines) {
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return;
  }
  while (const dirent* entry = ::readdir(dir)) {
    if (lines.size() >= kMaxFolderFiles) break;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, 0) != 0) continue;
    const std::string relative = prefix + std::string(name);
    if (S_ISREG(st.st_mode)) {
      lines.push_back(relative + " " + std::to_string(st.st_size));
    } else if (S_ISDIR(st.st_mode) && depth < 32 && entered.emplace(st.st_dev, st.st_ino).second) {
      const int inner = ::openat(::dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (inner >= 0) list_folder(inner, relative + "/", depth + 1, entered, lines);
    }
  }
  ::closedir(dir);
}

std::string folder_part(const std::string& folder, const std::string& name) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return name + "/ unreadable";
  std::vector<std::string> lines;
  Entered entered;
  if (struct stat st{}; ::fstat(fd, &st) == 0) entered.emplace(st.st_dev, st.st_ino);
  list_folder(fd, "", 0, entered, lines);
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return name + "/ " + std::to_string(lines.size()) + " files " + sha256_field(text);
}

}  // namespace

std::string elf_build_id(int fd) {
  Elf64_Ehdr elf;
  if (!read_at(fd, &elf, sizeof elf, 0) || std::memcmp(elf.e_ident, ELFMAG, SELFMAG) != 0 ||
      elf.e_ident[EI_CLASS] != ELFCLASS64 || elf.e_ident[EI_DATA] != ELFDATA2LSB ||
      elf.e_phentsize != sizeof(Elf64_Phdr) || elf.e_phnum == 0 || elf.e_phnum > 512) {
    return {};
  }
  std::vector<Elf64_Phdr> segments(elf.e_phnum);
  if (!read_at(fd, segments.data(), segments.size() * sizeof(Elf64_Phdr), elf.e_phoff)) return {};
  for (const auto& segment : segments) {
    if (segment.p_type != PT_NOTE || segment.p_filesz == 0 || segment.p_filesz > (64 << 10)) {
      continue;
    }
    std::vector<char> notes(segment.p_filesz);
    if (!read_at(fd, notes.data(), notes.size(), segment.p_offset)) continue;
    if (std::string id = build_id_in_notes(notes); !id.empty()) return id;
  }
  return {};
}

std::string build_part(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(path).filename().string();
  std::error_code error;
  if (fs::is_directory(path, error)) return folder_part(path, name);
  // Non-blocking: a FIFO in a compiler's place must not hang the process.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return name + " missing";
  struct stat st {};
  std::string part;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    part = name + " unreadable";
  } else if (std::string id = elf_build_id(fd); !id.empty()) {
    part = name + " elf " + std::to_string(st.st_size) + " " + id;
  } else {
    part = name + " file " + std::to_string(st.st_size) + " " + content_hash(fd);
  }
  ::close(fd);
  return part;
}

}  // namespace kcache
