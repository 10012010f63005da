// PoCL's program binaries, read and extended with the work-group code a
// program's launches compiled (docs/design.md §10.1).
//
// PoCL compiles a kernel's work-group function at its first launch with a
// new local size and keeps it in the program's folder,
// <POCL_CACHE_DIR>/<folder>/<kernel>/<local size ...>/<kernel>.so. Its
// binary (CL_PROGRAM_BINARIES) is made once, at the first query, and holds
// the files of each kernel's folder as they were then; a program made from
// it unpacks them into its own folder, and a launch that finds its file
// there compiles nothing. The layer reads the binary after a build, before
// any launch, so a program it serves again compiles every work-group
// function again (CLBlast's tests launch hundreds of local sizes). Adding
// the files found in the folder when the program is released gives a
// binary that PoCL unpacks in full.
//
// The layout is PoCL's own, not a published format: only version 9
// (PoCL 3.1) is read, every size is checked against the bytes, and
// anything else is not a PoCL binary to this code (nothing is added).
//
// Layout of version 9, little-endian (as PoCL 3.1 writes it):
//   header     77 bytes: "poclbin\0", u64 device id, u32 version,
//              u32 kernel count, 12 bytes of flags, the program's folder
//              name (41 bytes, NUL-padded)
//   program    u64 size, then that many bytes (the file program.bc)
//   kernels    one record each: u64 record size (all of it), u64 size of
//              its files, u32 size of its argument information, u32 name
//              size, the name, ..., and at its end its files, each
//              u32 path size, path ("/<kernel>/<dir>/<file>"),
//              u32 content size, content
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::layer {

inline constexpr std::uint32_t kPoclBinaryVersion = 9;

struct PoclKernelRecord {
  std::string name;
  std::size_t begin = 0;           // offset of the record in the binary
  std::size_t end = 0;             // one past its last byte
  std::vector<std::string> files;  // paths of the files it carries
};

struct PoclBinary {
  std::string folder;  // the program's folder under POCL_CACHE_DIR
  std::vector<PoclKernelRecord> kernels;
};

// The layout of `binary`; nullopt when it is not a whole PoCL binary of
// version kPoclBinaryVersion.
std::optional<PoclBinary> read_pocl_binary(std::span<const std::uint8_t> binary);

struct WorkGroupCode {
  std::vector<std::uint8_t> binary;
  std::size_t files = 0;  // added to it
};

// `binary` with every work-group function PoCL compiled for its program
// that it does not hold yet: the regular files <kernel>/<dir>/<kernel>.so
// of the program's folder in `pocl_dir`. nullopt when there is none to
// add, or `binary` is not one read_pocl_binary reads.
std::optional<WorkGroupCode> with_work_group_code(std::span<const std::uint8_t> binary,
                                                  const std::string& pocl_dir);

}  // namespace kcache::layer
