#include "compiler/build_parts.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "compiler/compiler_facts.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

// A small 64-bit ELF file: one PT_NOTE segment holding a GNU build-id
// note of `id`, then `tail` (what differs between two builds of one id).
std::string elf_with_build_id(const std::string& id, const std::string& tail = "code") {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_DYN;
  header.e_machine = EM_X86_64;
  header.e_version = EV_CURRENT;
  header.e_phoff = sizeof header;
  header.e_ehsize = sizeof header;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 1;
  Elf64_Nhdr note{4, static_cast<Elf64_Word>(id.size()), NT_GNU_BUILD_ID};
  std::string notes(reinterpret_cast<const char*>(&note), sizeof note);
  notes += std::string("GNU\0", 4) + id;
  notes.resize((notes.size() + 3) & ~std::size_t{3}, '\0');
  Elf64_Phdr segment{};
  segment.p_type = PT_NOTE;
  segment.p_offset = sizeof header + sizeof segment;
  segment.p_filesz = notes.size();
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) +
         std::string(reinterpret_cast<const char*>(&segment), sizeof segment) + notes + tail;
}

std::string part_of(const std::string& path) { return build_part(path, Env::posix()); }

// The same build installed elsewhere (another folder, inode and time) is
// the same part; its file name is part of it.
TEST(BuildPartsTest, AnElfFileIsItsBuildIdWhereverItLies) {
  TempFolder dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  write_file(dir / "a/libx.so.1", elf_with_build_id("\x12\x34\xab\xcd"));
  write_file(dir / "b/libx.so.1", elf_with_build_id("\x12\x34\xab\xcd"));
  EXPECT_EQ(part_of(dir / "a/libx.so.1"),
            "libx.so.1 elf " + std::to_string(fs::file_size(dir / "a/libx.so.1")) + " 1234abcd");
  EXPECT_EQ(part_of(dir / "a/libx.so.1"), part_of(dir / "b/libx.so.1"));
  EXPECT_EQ(build_fingerprint({dir / "a/libx.so.1"}, Env::posix()),
            build_fingerprint({dir / "b/libx.so.1"}, Env::posix()));
  // Another build: another id.
  write_file(dir / "b/libx.so.1", elf_with_build_id("\x12\x34\xab\xce"));
  EXPECT_NE(build_fingerprint({dir / "a/libx.so.1"}, Env::posix()),
            build_fingerprint({dir / "b/libx.so.1"}, Env::posix()));
  // The id is read from its note, not guessed: a damaged note is no id,
  // and the file is then its bytes.
  std::string damaged = elf_with_build_id("\x12\x34\xab\xcd");
  damaged[sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr)] = 100;  // n_namesz past the segment
  write_file(dir / "b/libx.so.1", damaged);
  EXPECT_NE(part_of(dir / "b/libx.so.1").find(" file "), std::string::npos)
      << part_of(dir / "b/libx.so.1");
}

// What the toolchains link carries one (Debian's GCC links with
// --build-id): so does this test binary.
TEST(BuildPartsTest, ThisTestBinaryHasABuildId) {
  auto self = Env::posix().open_random_access("/proc/self/exe");
  ASSERT_TRUE(self.is_ok()) << self.status().message();
  const std::string id = elf_build_id(**self);
  EXPECT_GE(id.size(), 16u) << "this test binary carries no GNU build-id";
}

// A file that is no ELF (a toolkit's version.json) is its bytes.
TEST(BuildPartsTest, AnotherFileIsItsBytes) {
  TempFolder dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  write_file(dir / "a/version.json", "{\"cuda\": \"13.0.48\"}");
  write_file(dir / "b/version.json", "{\"cuda\": \"13.0.48\"}");
  EXPECT_TRUE(part_of(dir / "a/version.json").starts_with("version.json file 19 xxh3:"));
  EXPECT_EQ(part_of(dir / "a/version.json"), part_of(dir / "b/version.json"));
  write_file(dir / "b/version.json", "{\"cuda\": \"13.0.88\"}");
  EXPECT_NE(part_of(dir / "a/version.json"), part_of(dir / "b/version.json"));
  EXPECT_EQ(part_of(dir / "a/nothing.so"), "nothing.so missing");
}

// A folder is the names and sizes of the files under it, whatever their
// times: a header added, removed or changed in size is another build.
TEST(BuildPartsTest, AFolderIsItsFilesNamesAndSizes) {
  TempFolder dir;
  for (const std::string root : {"a", "b"}) {
    fs::create_directories(dir / (root + "/include/cccl/cub"));
    write_file(dir / (root + "/include/cuda_fp16.h"), "half");
    write_file(dir / (root + "/include/cccl/cub/cub.cuh"), "cub");
  }
  const std::string a = part_of(dir / "a/include");
  EXPECT_TRUE(a.starts_with("include/ 2 files sha256:")) << a;
  EXPECT_EQ(part_of(dir / "b/include"), a);
  write_file(dir / "b/include/cccl/cub/cub.cuh", "cub, grown");
  EXPECT_NE(part_of(dir / "b/include"), a);
  write_file(dir / "b/include/cccl/cub/cub.cuh", "cub");
  EXPECT_EQ(part_of(dir / "b/include"), a);
  write_file(dir / "b/include/cccl/cub/new.cuh", "");
  EXPECT_NE(part_of(dir / "b/include"), a);
}

// Links that lead back up (a loop) are not followed round: a folder is
// entered once, and the listing ends.
TEST(BuildPartsTest, ALoopOfLinksEnds) {
  TempFolder dir;
  fs::create_directories(dir / "include/sub");
  write_file(dir / "include/sub/a.h", "a");
  fs::create_directory_symlink(dir / "include", dir / "include/sub/up");
  fs::create_directory_symlink(dir / "include", dir / "include/sub/up2");
  fs::create_directory_symlink("..", dir / "include/sub/parent");
  EXPECT_TRUE(part_of(dir / "include").starts_with("include/ 1 files sha256:"))
      << part_of(dir / "include");
}

// A FIFO in a library's place is read as nothing, at once.
TEST(BuildPartsTest, AFifoDoesNotHang) {
  TempFolder dir;
  ASSERT_EQ(::mkfifo((dir / "libfifo.so").c_str(), 0600), 0);
  EXPECT_EQ(part_of(dir / "libfifo.so"), "libfifo.so unreadable");
}

}  // namespace
}  // namespace kcache
