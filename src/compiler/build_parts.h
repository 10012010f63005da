// What one file or folder of a compiler's build is, in words that are the
// same on every machine that installed that build: the identity that keys
// and packages carry must not name an inode or a ctime, or a package
// packed on one machine (or a cache shared by a cluster) would fit no
// other (design.md §1.4, "A compiler's build").
//
// - An ELF file: its GNU build-id (the linker's hash of what it linked),
//   and its size. A file rebuilt is another build-id; the same build
//   copied, installed by another package manager or under another prefix
//   is the same.
// - Another file (a toolkit's version.json, an ELF without a build-id): an
//   XXH3-128 of its bytes, and its size.
// - A folder (a toolkit's include folder): the relative path and size of
//   every file under it, sorted (at most kMaxFolderFiles): a header added,
//   removed or grown is another build, as installs keep sizes and names but
//   not times.
#pragma once

#include <cstddef>
#include <string>

#include "env/env.h"

namespace kcache {

inline constexpr std::size_t kMaxFolderFiles = 100000;

// "<name> elf <size> <build-id hex>", "<name> file <size> xxh3:<hex>",
// "<name>/ <count> files sha256:<hex>", "<name> missing" or "<name>
// unreadable", where <name> is
// the last part of `path` (links resolved by the caller). Files are read
// through `env`; a folder is walked with one fstatat per entry relative to
// its folder (Env::list_dir and a stamp by path took twice as long over a
// toolkit's ~2,000 headers).
std::string build_part(const std::string& path, const Env& env);

// The GNU build-id of the ELF file `file`, as hex; empty when it is no
// 64-bit little-endian ELF file or has no such note.
std::string elf_build_id(const File& file);

}  // namespace kcache
