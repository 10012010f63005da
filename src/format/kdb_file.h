// The .kdb package file: an immutable, read-only database of entries for
// one target. Layout (docs/formats.md §2): a 64-byte header, the encoded
// entries back to back, a sorted index of (key, offset, size), and a small
// metadata block; the header's checksum covers header, index and metadata,
// and each entry carries its own. A signed package (flag 1) adds the
// SHA-256 of each entry and an Ed25519 signature over the header and
// everything after the entries; this file keeps the bytes, and sign/
// checks them.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_buffer.h"
#include "base/field_text.h"
#include "base/hash.h"
#include "env/env.h"
#include "format/key_buckets.h"

namespace kcache {

inline constexpr std::uint32_t kKdbFormatVersion = 2;
inline constexpr std::size_t kKdbHeaderSize = 64;
// key, entry offset (8 bytes), entry size (8 bytes)
inline constexpr std::size_t kKdbIndexEntrySize = CacheKey::kSize + 16;
// Header flag: the package is signed (docs/formats.md §2).
inline constexpr std::uint32_t kKdbFlagSigned = 1;
// The signature block: magic (8), public key (32), signature (64).
inline constexpr std::size_t kKdbSignatureBlockSize = 104;

struct KdbSlot {
  CacheKey key;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t ordinal = 0;  // its place in the index
};

using KdbPublicKey = std::array<std::uint8_t, 32>;
using KdbSignature = std::array<std::uint8_t, 64>;

// Signs a package as write_kdb writes it: the signer's public key, and the
// function that signs a message with its private key.
struct KdbSigner {
  KdbPublicKey public_key{};
  std::function<Result<KdbSignature>(std::span<const std::uint8_t> message)> sign;
};

class KdbReader {
 public:
  // Opens and checks header and index (one read each). kNotFound when the
  // file is absent; kCorruption when it is not a valid .kdb.
  static Result<std::unique_ptr<KdbReader>> open(const std::string& path, const Env& env);

  [[nodiscard]] std::optional<KdbSlot> find(const CacheKey& key) const;
  // The encoded entry in `slot` (not yet verified: decode_entry does that),
  // read into a buffer of its own.
  [[nodiscard]] Result<ByteBuffer> read(const KdbSlot& slot) const;

  // Maps the entries so that `view` lends them instead of reading them
  // (docs/design.md §3.2, the mapped system tier); kNotSupported where the
  // file cannot be mapped. Not thread-safe: before the reader is shared.
  Status map();
  [[nodiscard]] bool mapped() const { return mapping_ != nullptr; }
  // The encoded entry in `slot`: mapped, a view of the mapping that keeps
  // it alive while the buffer lives; otherwise what `read` gives.
  [[nodiscard]] Result<ByteBuffer> view(const KdbSlot& slot) const;
  // Whether the open file is as it was when opened (fstat: size, mtime,
  // ctime) and, mapped, no page of it was lost to a truncation. True
  // where the file cannot be stamped.
  [[nodiscard]] Result<bool> unchanged() const;
  [[nodiscard]] const std::vector<KdbSlot>& slots() const { return slots_; }
  [[nodiscard]] const Fields& metadata() const { return metadata_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  // The file opened (its device and inode).
  [[nodiscard]] FileId file_id() const { return file_->id(); }

  // Signed packages only (all three nullptr/empty otherwise): the key the
  // package names as its signer, its signature, the SHA-256 of an entry.
  [[nodiscard]] bool is_signed() const { return signed_; }
  [[nodiscard]] const KdbPublicKey* signer_key() const { return signed_ ? &signer_ : nullptr; }
  [[nodiscard]] const KdbSignature* signature() const { return signed_ ? &signature_ : nullptr; }
  [[nodiscard]] const Sha256* entry_digest(const KdbSlot& slot) const {
    return slot.ordinal < digests_.size() ? &digests_[slot.ordinal] : nullptr;
  }
  // What the signature is over (formats.md §2): a domain string, then the
  // SHA-256 of the header and of every byte after the entries but the
  // signature itself. Computed on each call; empty when unsigned.
  [[nodiscard]] std::vector<std::uint8_t> signed_message() const;

 private:
  KdbReader() = default;
  std::string path_;
  std::unique_ptr<File> file_;
  std::optional<FileStamp> opened_stamp_;
  std::uint64_t entries_end_ = 0;  // where the index begins
  std::shared_ptr<const FileMapping> mapping_;
  std::vector<KdbSlot> slots_;  // sorted by key
  KeyBuckets buckets_;          // of slots_
  Fields metadata_;
  bool signed_ = false;
  std::array<std::uint8_t, kKdbHeaderSize> header_{};
  ByteBuffer tail_;  // signed: index, metadata, digests and signature block
  std::vector<Sha256> digests_;
  KdbPublicKey signer_{};
  KdbSignature signature_{};
};

// Whether `head` (a file's first bytes) begins as a .kdb does: its magic.
bool has_kdb_magic(std::span<const std::uint8_t> head);

// Writes a .kdb holding `entries` (encoded entries with their keys; keys
// must be distinct) and `metadata`, atomically replacing `path`; signed by
// `signer` when given.
Status write_kdb(Env& env, const std::string& path,
                 const std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>>& entries,
                 const Fields& metadata, const KdbSigner* signer = nullptr);

}  // namespace kcache
