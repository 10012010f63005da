// Helpers shared by the libFuzzer targets (docs/fuzzing.md).
//
// The targets check invariants, not only "no crash": a violated one prints
// what was expected and aborts, which libFuzzer reports as a crash and saves
// the input. The checksums of the formats are integrity checks, not
// signatures (anyone can compute XXH3), so the targets also "reseal" a
// mutated input, recomputing its checksum the way the writer does, to reach
// the code behind the checksum test with hostile bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_buffer.h"
#include "base/hash.h"
#include "env/env.h"
#include "env/temp_dir.h"
#include "format/endian.h"
#include "format/entry.h"
#include "format/kdb_file.h"

// Aborts with the failed condition and a note when `condition` is false.
// Unlike assert, it is never compiled out.
#define KCACHE_FUZZ_CHECK(condition, note)                                                         \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      std::fprintf(stderr, "%s:%d: invariant violated: %s (%s)\n", __FILE__, __LINE__, #condition, \
                   std::string(note).c_str());                                                     \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace kcache::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline std::span<const std::uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// A buffer of exactly `bytes.size()` bytes (ByteBuffer::allocate pools
// buffers of 4 KiB and more in bigger blocks; their tails are poisoned
// under ASan, but an exact buffer needs no such help).
inline ByteBuffer exact_buffer(std::span<const std::uint8_t> bytes) {
  ByteBuffer buffer{std::shared_ptr<std::uint8_t[]>(new std::uint8_t[bytes.size()]), bytes.size(),
                    bytes.size()};
  if (!bytes.empty()) std::memcpy(buffer.data.get(), bytes.data(), bytes.size());
  return buffer;
}

// The input cut at each NUL byte: environment values, option strings and
// source texts cannot hold one, so NUL is a natural separator and seeds
// stay readable. A missing piece (the input ended) is absent, an empty
// piece is an empty string.
inline std::vector<std::string> split_pieces(std::string_view text) {
  std::vector<std::string> pieces;
  if (text.empty()) return pieces;
  while (true) {
    std::size_t end = text.find('\0');
    pieces.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return pieces;
}

// Recomputes an entry's checksum in place (docs/formats.md §1: bytes
// [0, 72) then everything after the 88-byte header). False when `bytes` is
// too short to hold one.
inline bool reseal_entry(std::span<std::uint8_t> bytes) {
  constexpr std::size_t kChecksumOffset = 72;
  if (bytes.size() < kEntryHeaderSize) return false;
  Checksummer checksum;
  checksum.update(bytes.subspan(0, kChecksumOffset));
  checksum.update(bytes.subspan(kEntryHeaderSize));
  Checksum128 digest = checksum.finish();
  std::memcpy(bytes.data() + kChecksumOffset, digest.data(), digest.size());
  return true;
}

// Recomputes a .kdb's header checksum in place (docs/formats.md §2: bytes
// [0, 48), then the index and metadata, which run from the index offset to
// the end). False when the header is too short or its index offset lies
// outside the file.
inline bool reseal_kdb(std::span<std::uint8_t> bytes) {
  constexpr std::size_t kChecksumOffset = 48;
  if (bytes.size() < kKdbHeaderSize) return false;
  const std::uint64_t index_offset = le::get_u64(bytes.data() + 24);
  if (index_offset < kKdbHeaderSize || index_offset > bytes.size()) return false;
  // A signed package's last 64 bytes (its signature) are not covered.
  const bool is_signed = (le::get_u32(bytes.data() + 12) & kKdbFlagSigned) != 0;
  const std::size_t end =
      is_signed && bytes.size() >= index_offset + 64 ? bytes.size() - 64 : bytes.size();
  Checksummer checksum;
  checksum.update(bytes.subspan(0, kChecksumOffset));
  checksum.update(bytes.subspan(index_offset, end - index_offset));
  Checksum128 digest = checksum.finish();
  std::memcpy(bytes.data() + kChecksumOffset, digest.data(), digest.size());
  return true;
}

// A private folder (0700) for this fuzzing process, removed at exit.
inline const std::string& private_dir(const char* prefix) {
  static const TempDir dir = [prefix] {
    auto created = TempDir::create(prefix);
    KCACHE_FUZZ_CHECK(created.is_ok(), created.status().to_string());
    return std::move(*created);
  }();
  return dir.path();
}

// Writes `bytes` to `path`, replacing it (no fsync: the file is scratch).
inline void write_scratch_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  KCACHE_FUZZ_CHECK(file != nullptr, "cannot create " + path);
  bool written = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  KCACHE_FUZZ_CHECK(std::fclose(file) == 0 && written, "cannot write " + path);
}

// The real file system without fsync: the targets write scratch files by
// the thousand per second, and durability is not under test.
class NoSyncEnv final : public EnvWrapper {
 public:
  NoSyncEnv() : EnvWrapper(Env::posix()) {}
  Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data,
                           bool /*sync*/, mode_t mode) override {
    return EnvWrapper::write_file_atomic(path, data, /*sync=*/false, mode);
  }
};

}  // namespace kcache::fuzz
