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
#include <span>
#include <utility>
#include <vector>

#include "base/hash.h"

namespace kcache {
namespace {

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

// "xxh3:<hex>" of the bytes of `file`, `size` of them.
std::string content_hash(const File& file, std::uint64_t size) {
  Checksummer sum;
  std::vector<std::uint8_t> buffer(std::min<std::uint64_t>(size, 1 << 20));
  for (std::uint64_t offset = 0; offset < size;) {
    const std::span<std::uint8_t> chunk(buffer.data(),
                                        std::min<std::uint64_t>(buffer.size(), size - offset));
    if (!file.read_at(offset, chunk).is_ok()) return "unreadable";
    sum.update(chunk);
    offset += chunk.size();
  }
  return "xxh3:" + to_hex(sum.finish());
}

// Reads `out` whole from `file` at `offset`.
template <typename T>
bool read_into(const File& file, std::uint64_t offset, T* out, std::size_t count = 1) {
  return file.read_at(offset, {reinterpret_cast<std::uint8_t*>(out), count * sizeof(T)}).is_ok();
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

std::string elf_build_id(const File& file) {
  Elf64_Ehdr elf;
  if (!read_into(file, 0, &elf) || std::memcmp(elf.e_ident, ELFMAG, SELFMAG) != 0 ||
      elf.e_ident[EI_CLASS] != ELFCLASS64 || elf.e_ident[EI_DATA] != ELFDATA2LSB ||
      elf.e_phentsize != sizeof(Elf64_Phdr) || elf.e_phnum == 0 || elf.e_phnum > 512) {
    return {};
  }
  std::vector<Elf64_Phdr> segments(elf.e_phnum);
  if (!read_into(file, elf.e_phoff, segments.data(), segments.size())) return {};
  for (const auto& segment : segments) {
    if (segment.p_type != PT_NOTE || segment.p_filesz == 0 || segment.p_filesz > (64 << 10)) {
      continue;
    }
    std::vector<char> notes(segment.p_filesz);
    if (!read_into(file, segment.p_offset, notes.data(), notes.size())) continue;
    if (std::string id = build_id_in_notes(notes); !id.empty()) return id;
  }
  return {};
}

std::string build_part(const std::string& path, const Env& env) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(path).filename().string();
  std::error_code error;
  if (fs::is_directory(path, error)) return folder_part(path, name);
  // Opened as every read-only file is (a FIFO in its place does not hang).
  auto file = env.open_random_access(path);
  if (!file) {
    return name + (file.status().code() == StatusCode::kNotFound ? " missing" : " unreadable");
  }
  auto size = (*file)->size();
  if (!size) return name + " unreadable";
  const std::string id = elf_build_id(**file);
  return name + (id.empty() ? " file " : " elf ") + std::to_string(*size) + " " +
         (id.empty() ? content_hash(**file, *size) : id);
}

}  // namespace kcache
