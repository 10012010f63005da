#include "format/kdb_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <tuple>

#include "base/hash.h"
#include "env/abandoned_temporaries.h"
#include "env/file_mapping.h"
#include "format/endian.h"

namespace kcache {
namespace {

constexpr std::uint8_t kMagic[8] = {'K', 'C', 'A', 'C', 'H', 'E', 'D', 'B'};
constexpr std::uint8_t kSignatureMagic[8] = {'K', 'C', 'S', 'I', 'G', 'E', 'D', '1'};
constexpr std::size_t kChecksumOffset = 48;
constexpr std::size_t kSignatureSize = std::tuple_size_v<KdbSignature>;
// Names what a signature is for, so that it can mean nothing else.
constexpr std::string_view kSignatureDomain = "kcache package signature 1";

// `after_entries`: the index, the metadata and, in a signed package, the
// digests and the signature block without the signature.
Checksum128 header_checksum(const std::uint8_t* header,
                            std::span<const std::uint8_t> after_entries) {
  Checksummer checksum;
  checksum.update({header, kChecksumOffset});
  checksum.update(after_entries);
  return checksum.finish();
}

std::vector<std::uint8_t> message_over(const std::uint8_t* header,
                                       std::span<const std::uint8_t> after_entries) {
  const Sha256 digest = sha256_of_parts({{header, kKdbHeaderSize}, after_entries});
  std::vector<std::uint8_t> message(kSignatureDomain.begin(), kSignatureDomain.end());
  message.push_back(0);
  message.insert(message.end(), digest.begin(), digest.end());
  return message;
}

}  // namespace

Result<std::unique_ptr<KdbReader>> KdbReader::open(const std::string& path, const Env& env) {
  auto file = env.open_random_access(path);
  if (!file) return file.status();
  // Before anything is read: a change from here on shows in `unchanged`.
  auto opened_stamp = (*file)->stamp();
  auto size = (*file)->size();
  if (!size) return size.status();
  const std::uint64_t file_size = *size;
  if (file_size < kKdbHeaderSize)
    return Status::corruption(path + " is shorter than a .kdb header");
  std::uint8_t header[kKdbHeaderSize];
  if (Status s = (*file)->read_at(0, header); !s.is_ok()) return s;
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0) {
    return Status::corruption(path + " is not a kcache .kdb file (bad magic)");
  }
  const std::uint32_t version = le::get_u32(header + 8);
  if (version != kKdbFormatVersion) {
    return Status::corruption(path + " is of .kdb format version " + std::to_string(version) +
                              "; this kcache reads version " + std::to_string(kKdbFormatVersion));
  }
  const std::uint32_t flags = le::get_u32(header + 12);
  if ((flags & ~kKdbFlagSigned) != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%#x", flags & ~kKdbFlagSigned);
    return Status::corruption(path + " has .kdb header flags this kcache does not know (" + hex +
                              ")");
  }
  const bool is_signed = (flags & kKdbFlagSigned) != 0;
  const std::uint64_t count = le::get_u64(header + 16);
  const std::uint64_t index_offset = le::get_u64(header + 24);
  const std::uint64_t meta_offset = le::get_u64(header + 32);
  const std::uint64_t meta_size = le::get_u32(header + 40);
  const std::uint64_t trailer_size =
      is_signed ? count * std::tuple_size_v<Sha256> + kKdbSignatureBlockSize : 0;
  // The header's sizes agree with one another first (each bounded, so no
  // sum below wraps), then with the file's length: a cut file is said as
  // one, whatever part of it is gone.
  constexpr std::uint64_t kMaxCount = std::uint64_t(1) << 40;
  constexpr std::uint64_t kMaxOffset = std::uint64_t(1) << 60;
  if (count > kMaxCount || index_offset < kKdbHeaderSize || index_offset > kMaxOffset ||
      meta_offset != index_offset + count * kKdbIndexEntrySize) {
    return Status::corruption(path + " has an inconsistent .kdb header");
  }
  if (const std::uint64_t described = meta_offset + meta_size + trailer_size;
      described != file_size) {
    const bool shorter = described > file_size;
    const std::uint64_t off = shorter ? described - file_size : file_size - described;
    return Status::corruption(path + " is " + std::to_string(off) +
                              (off == 1 ? " byte " : " bytes ") +
                              (shorter ? "shorter than its header says, as if truncated"
                                       : "longer than its header says, as if appended to"));
  }
  ByteBuffer tail = ByteBuffer::allocate(file_size - index_offset);
  if (Status s = (*file)->read_at(index_offset, tail.mutable_span()); !s.is_ok()) return s;
  auto index = tail.span().subspan(0, count * kKdbIndexEntrySize);
  auto meta = tail.span().subspan(index.size(), meta_size);
  const std::size_t checked = tail.size - (is_signed ? kSignatureSize : 0);
  Checksum128 expected = header_checksum(header, tail.span().subspan(0, checked));
  if (std::memcmp(expected.data(), header + kChecksumOffset, expected.size()) != 0) {
    return Status::corruption(path + " failed the checksum of its header and index (damaged)");
  }

  std::unique_ptr<KdbReader> reader(new KdbReader());
  if (is_signed) {
    const std::uint8_t* digests = meta.data() + meta.size();
    const std::uint8_t* block = digests + count * std::tuple_size_v<Sha256>;
    if (std::memcmp(block, kSignatureMagic, sizeof kSignatureMagic) != 0) {
      return Status::corruption(path + " has a malformed signature block");
    }
    reader->digests_.resize(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::memcpy(reader->digests_[i].data(), digests + i * reader->digests_[i].size(),
                  reader->digests_[i].size());
    }
    std::memcpy(reader->signer_.data(), block + sizeof kSignatureMagic, reader->signer_.size());
    std::memcpy(reader->signature_.data(), block + sizeof kSignatureMagic + reader->signer_.size(),
                reader->signature_.size());
    reader->signed_ = true;
  }
  reader->slots_.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* p = index.data() + i * kKdbIndexEntrySize;
    CacheKey::Bytes key;
    std::memcpy(key.data(), p, key.size());
    KdbSlot slot{CacheKey(key), le::get_u64(p + CacheKey::kSize),
                 le::get_u64(p + CacheKey::kSize + 8), i};
    // Within [64, index), tested without a sum that could wrap around.
    if (slot.offset < kKdbHeaderSize || slot.offset > index_offset ||
        slot.size > index_offset - slot.offset ||
        (i > 0 && !(reader->slots_.back().key < slot.key))) {
      return Status::corruption(path + " has a malformed index");
    }
    reader->slots_.push_back(slot);
  }
  reader->buckets_.build(reader->slots_.size(),
                         [&](std::size_t i) -> const CacheKey& { return reader->slots_[i].key; });
  auto fields =
      decode_fields(std::string_view(reinterpret_cast<const char*>(meta.data()), meta.size()));
  if (!fields) return Status::corruption(path + " metadata: " + fields.status().message());
  reader->metadata_ = std::move(*fields);
  if (is_signed) {
    std::memcpy(reader->header_.data(), header, kKdbHeaderSize);
    reader->tail_ = std::move(tail);
  }
  reader->path_ = path;
  reader->file_ = std::move(*file);
  if (opened_stamp) reader->opened_stamp_ = *opened_stamp;
  reader->entries_end_ = index_offset;
  return reader;
}

Status KdbReader::map() {
  if (mapping_ != nullptr) return Status::ok();
  auto mapping = file_->map(entries_end_);
  if (!mapping) return mapping.status();
  mapping_ = std::move(*mapping);
  return Status::ok();
}

Result<ByteBuffer> KdbReader::view(const KdbSlot& slot) const {
  if (mapping_ == nullptr) return read(slot);
  // The slot lies within [64, index): open checked it.
  ByteBuffer bytes = view_of(mapping_, slot.offset, slot.size);
  // The caller reads it whole next (its checksum), most often from memory
  // the CPU's caches lost to a module load: the first lines are asked for
  // at once, not one miss after another (docs/benchmarks.md). A prefetch
  // never faults: a page not mapped yet, or lost to a truncation, is
  // passed over.
  constexpr std::size_t kLine = 64;
  constexpr std::size_t kPrefetched = 16 * 1024;
  for (std::size_t at = 0; at < std::min(bytes.size, kPrefetched); at += kLine) {
    __builtin_prefetch(bytes.data.get() + at);
  }
  return bytes;
}

Result<bool> KdbReader::unchanged() const {
  if (mapping_ != nullptr && mapping_->damaged()) return false;
  if (!opened_stamp_) return true;
  auto now = file_->stamp();
  if (!now) return now.status();
  return *now == *opened_stamp_;
}

std::optional<KdbSlot> KdbReader::find(const CacheKey& key) const {
  auto it = buckets_.find(slots_.begin(), slots_.end(), key,
                          [](const KdbSlot& slot) -> const CacheKey& { return slot.key; });
  if (it == slots_.end()) return std::nullopt;
  return *it;
}

std::vector<std::uint8_t> KdbReader::signed_message() const {
  if (!signed_) return {};
  return message_over(header_.data(), tail_.span().subspan(0, tail_.size - kSignatureSize));
}

Result<ByteBuffer> KdbReader::read(const KdbSlot& slot) const {
  ByteBuffer buffer = ByteBuffer::allocate(slot.size);
  if (Status s = file_->read_at(slot.offset, buffer.mutable_span()); !s.is_ok()) return s;
  return buffer;
}

bool has_kdb_magic(std::span<const std::uint8_t> head) {
  return head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) == 0;
}

Status write_kdb(Env& env, const std::string& path,
                 const std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>>& entries,
                 const Fields& metadata, const KdbSigner* signer) {
  std::vector<const std::pair<CacheKey, std::vector<std::uint8_t>>*> sorted;
  std::uint64_t body = 0;
  for (const auto& entry : entries) {
    sorted.push_back(&entry);
    body += entry.second.size();
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1]->first == sorted[i]->first) {
      return Status::invalid_argument("duplicate key " + sorted[i]->first.hex() + " in a .kdb");
    }
  }
  const std::string meta = encode_fields(metadata);
  const std::uint64_t index_offset = kKdbHeaderSize + body;
  const std::uint64_t index_size = sorted.size() * kKdbIndexEntrySize;
  const std::uint64_t trailer_size =
      signer != nullptr ? sorted.size() * std::tuple_size_v<Sha256> + kKdbSignatureBlockSize : 0;
  std::vector<std::uint8_t> out(index_offset + index_size + meta.size() + trailer_size);

  std::uint64_t offset = kKdbHeaderSize;
  std::uint8_t* index = out.data() + index_offset;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& [key, bytes] = *sorted[i];
    if (!bytes.empty()) std::memcpy(out.data() + offset, bytes.data(), bytes.size());
    std::uint8_t* p = index + i * kKdbIndexEntrySize;
    std::memcpy(p, key.bytes().data(), CacheKey::kSize);
    le::put_u64(p + CacheKey::kSize, offset);
    le::put_u64(p + CacheKey::kSize + 8, bytes.size());
    offset += bytes.size();
  }
  std::memcpy(index + index_size, meta.data(), meta.size());
  if (signer != nullptr) {
    std::uint8_t* digest = index + index_size + meta.size();
    for (const auto* entry : sorted) {
      const Sha256 d = sha256(entry->second);
      std::memcpy(digest, d.data(), d.size());
      digest += d.size();
    }
    std::memcpy(digest, kSignatureMagic, sizeof kSignatureMagic);
    std::memcpy(digest + sizeof kSignatureMagic, signer->public_key.data(),
                signer->public_key.size());
  }

  std::uint8_t* h = out.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  le::put_u32(h + 8, kKdbFormatVersion);
  le::put_u32(h + 12, signer != nullptr ? kKdbFlagSigned : 0);
  le::put_u64(h + 16, sorted.size());
  le::put_u64(h + 24, index_offset);
  le::put_u64(h + 32, index_offset + index_size);
  le::put_u32(h + 40, static_cast<std::uint32_t>(meta.size()));
  le::put_u32(h + 44, 0);
  const std::span<const std::uint8_t> after_entries(
      index, out.size() - index_offset - (signer != nullptr ? kSignatureSize : 0));
  Checksum128 checksum = header_checksum(h, after_entries);
  std::memcpy(h + kChecksumOffset, checksum.data(), checksum.size());
  if (signer != nullptr) {
    auto signature = signer->sign(message_over(h, after_entries));
    if (!signature) return signature.status();
    std::memcpy(out.data() + out.size() - kSignatureSize, signature->data(), kSignatureSize);
  }
  // What a writer killed before its rename left (a whole package's size
  // each time), then the package, installed for every user to read.
  remove_abandoned_temporaries(env, path);
  return env.write_file_atomic(path, out, /*sync=*/true, 0644);
}

}  // namespace kcache
