#include "format/kdb_file.h"

#include <algorithm>
#include <cstring>

#include "format/endian.h"
#include "format/hash.h"

namespace kcache {
namespace {

constexpr std::uint8_t kMagic[8] = {'K', 'C', 'A', 'C', 'H', 'E', 'D', 'B'};
constexpr std::size_t kChecksumOffset = 48;

Checksum128 header_checksum(const std::uint8_t* header, std::span<const std::uint8_t> index,
                            std::span<const std::uint8_t> meta) {
  Checksummer checksum;
  checksum.update({header, kChecksumOffset});
  checksum.update(index);
  checksum.update(meta);
  return checksum.finish();
}

}  // namespace

Result<std::unique_ptr<KdbReader>> KdbReader::open(const std::string& path, const Env& env) {
  auto file = env.open_random_access(path);
  if (!file) return file.status();
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
  if (le::get_u32(header + 8) != kKdbFormatVersion || le::get_u32(header + 12) != 0) {
    return Status::corruption(path + " has an unknown .kdb format version");
  }
  const std::uint64_t count = le::get_u64(header + 16);
  const std::uint64_t index_offset = le::get_u64(header + 24);
  const std::uint64_t meta_offset = le::get_u64(header + 32);
  const std::uint64_t meta_size = le::get_u32(header + 40);
  if (count > file_size / kKdbIndexEntrySize || index_offset < kKdbHeaderSize ||
      index_offset > file_size || meta_offset != index_offset + count * kKdbIndexEntrySize ||
      meta_offset + meta_size != file_size) {
    return Status::corruption(path + " has an inconsistent .kdb header (truncated?)");
  }
  ByteBuffer tail = ByteBuffer::allocate(file_size - index_offset);
  if (Status s = (*file)->read_at(index_offset, tail.mutable_span()); !s.is_ok()) return s;
  auto index = tail.span().subspan(0, count * kKdbIndexEntrySize);
  auto meta = tail.span().subspan(count * kKdbIndexEntrySize);
  Checksum128 expected = header_checksum(header, index, meta);
  if (std::memcmp(expected.data(), header + kChecksumOffset, expected.size()) != 0) {
    return Status::corruption(path + " failed its index checksum");
  }

  std::unique_ptr<KdbReader> reader(new KdbReader());
  reader->slots_.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* p = index.data() + i * kKdbIndexEntrySize;
    CacheKey::Bytes key;
    std::memcpy(key.data(), p, key.size());
    KdbSlot slot{CacheKey(key), le::get_u64(p + CacheKey::kSize),
                 le::get_u64(p + CacheKey::kSize + 8)};
    // Within [64, index), tested without a sum that could wrap around.
    if (slot.offset < kKdbHeaderSize || slot.offset > index_offset ||
        slot.size > index_offset - slot.offset ||
        (i > 0 && !(reader->slots_.back().key < slot.key))) {
      return Status::corruption(path + " has a malformed index");
    }
    reader->slots_.push_back(slot);
  }
  auto fields =
      decode_fields(std::string_view(reinterpret_cast<const char*>(meta.data()), meta.size()));
  if (!fields) return Status::corruption(path + " metadata: " + fields.status().message());
  reader->metadata_ = std::move(*fields);
  reader->path_ = path;
  reader->file_ = std::move(*file);
  return reader;
}

std::optional<KdbSlot> KdbReader::find(const CacheKey& key) const {
  auto it = std::lower_bound(slots_.begin(), slots_.end(), key,
                             [](const KdbSlot& slot, const CacheKey& k) { return slot.key < k; });
  if (it == slots_.end() || it->key != key) return std::nullopt;
  return *it;
}

Result<ByteBuffer> KdbReader::read(const KdbSlot& slot) const {
  ByteBuffer buffer = ByteBuffer::allocate(slot.size);
  if (Status s = file_->read_at(slot.offset, buffer.mutable_span()); !s.is_ok()) return s;
  return buffer;
}

Status write_kdb(Env& env, const std::string& path,
                 const std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>>& entries,
                 const Fields& metadata) {
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
  std::vector<std::uint8_t> out(index_offset + index_size + meta.size());

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

  std::uint8_t* h = out.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  le::put_u32(h + 8, kKdbFormatVersion);
  le::put_u32(h + 12, 0);
  le::put_u64(h + 16, sorted.size());
  le::put_u64(h + 24, index_offset);
  le::put_u64(h + 32, index_offset + index_size);
  le::put_u32(h + 40, static_cast<std::uint32_t>(meta.size()));
  le::put_u32(h + 44, 0);
  Checksum128 checksum = header_checksum(h, {index, index_size}, {index + index_size, meta.size()});
  std::memcpy(h + kChecksumOffset, checksum.data(), checksum.size());
  // A package is installed for every user of the machine to read.
  return env.write_file_atomic(path, out, /*sync=*/true, 0644);
}

}  // namespace kcache
