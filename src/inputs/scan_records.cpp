#include "inputs/scan_records.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"
#include "format/compression.h"
#include "format/endian.h"
#include "format/key_schema.h"

namespace kcache {
namespace {

// "KCSCAN" and the record format's version; then the key schema the head
// was written for, the codec, the raw and stored sizes, the stored body
// and an XXH3-128 of everything before it.
constexpr char kMagic[8] = {'K', 'C', 'S', 'C', 'A', 'N', '0', '1'};
constexpr std::size_t kPrefixSize = sizeof(kMagic) + 4 + 1 + 8 + 8;
constexpr std::size_t kTrailerSize = 16;

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void text(std::string_view s) {
    u64(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<std::uint8_t>& bytes() { return out_; }

 private:
  void put(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t> out_;
};

// Reads what Writer wrote; any read past the end fails the whole parse.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  bool u8(std::uint8_t& v) {
    if (!has(1)) return false;
    v = in_[at_++];
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (!has(4)) return false;
    v = le::get_u32(in_.data() + at_);
    at_ += 4;
    return true;
  }
  bool u64(std::uint64_t& v) {
    if (!has(8)) return false;
    v = le::get_u64(in_.data() + at_);
    at_ += 8;
    return true;
  }
  bool i64(std::int64_t& v) {
    std::uint64_t u = 0;
    if (!u64(u)) return false;
    v = static_cast<std::int64_t>(u);
    return true;
  }
  bool text(std::string_view& s) {
    std::uint64_t size = 0;
    if (!u64(size) || !has(size)) return false;
    s = {reinterpret_cast<const char*>(in_.data() + at_), static_cast<std::size_t>(size)};
    at_ += static_cast<std::size_t>(size);
    return true;
  }
  [[nodiscard]] bool done() const { return at_ == in_.size(); }

 private:
  [[nodiscard]] bool has(std::uint64_t n) const { return n <= in_.size() - at_; }
  std::span<const std::uint8_t> in_;
  std::size_t at_ = 0;
};

void write_inputs(Writer& w, const ScanInputs& inputs) {
  w.text(inputs.shape);
  w.u32(static_cast<std::uint32_t>(inputs.texts.size()));
  for (std::string_view text : inputs.texts) w.text(text);
}

// Whether the record's inputs are `inputs`, byte for byte.
bool same_inputs(Reader& r, const ScanInputs& inputs) {
  std::string_view shape;
  std::uint32_t count = 0;
  if (!r.text(shape) || shape != inputs.shape || !r.u32(count) || count != inputs.texts.size()) {
    return false;
  }
  for (std::string_view text : inputs.texts) {
    std::string_view kept;
    if (!r.text(kept) || kept != text) return false;
  }
  return true;
}

void write_stamp(Writer& w, const FileStamp& stamp) {
  w.u64(stamp.id.device);
  w.u64(stamp.id.inode);
  w.u8(static_cast<std::uint8_t>(stamp.type));
  w.u64(stamp.size);
  w.u64(static_cast<std::uint64_t>(stamp.modified_ns));
  w.u64(static_cast<std::uint64_t>(stamp.changed_ns));
}

bool read_stamp(Reader& r, FileStamp& stamp) {
  std::uint8_t type = 0;
  if (!r.u64(stamp.id.device) || !r.u64(stamp.id.inode) || !r.u8(type) || !r.u64(stamp.size) ||
      !r.i64(stamp.modified_ns) || !r.i64(stamp.changed_ns)) {
    return false;
  }
  if (type > static_cast<std::uint8_t>(FileType::kOther)) return false;
  stamp.type = static_cast<FileType>(type);
  return true;
}

Checksum128 checksum_of(std::span<const std::uint8_t> bytes) { return xxh3_128(bytes); }

// The record's file: named by the XXH3-128 of its inputs as written.
std::string record_name(std::span<const std::uint8_t> written_inputs) {
  return CacheKey(xxh3_128(written_inputs)).hex() + ".scan";
}

}  // namespace

bool ScanRecords::trusted() const {
  if (trusted_seen_.load(std::memory_order_acquire)) return true;
  if (!trusted_ || !trusted_()) return false;
  if (env_.is_dir(dir_)) trusted_seen_.store(true, std::memory_order_release);
  return true;
}

std::optional<ScanRecord> ScanRecords::find(const ScanInputs& inputs) const {
  if (!trusted()) return std::nullopt;
  Writer name;
  write_inputs(name, inputs);
  auto bytes = env_.read_file(dir_ + "/" + record_name(name.bytes()));
  if (!bytes) return std::nullopt;
  const std::span<const std::uint8_t> all = bytes->span();
  if (all.size() < kPrefixSize + kTrailerSize ||
      std::memcmp(all.data(), kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  const std::span<const std::uint8_t> checked = all.first(all.size() - kTrailerSize);
  const Checksum128 sum = checksum_of(checked);
  if (std::memcmp(sum.data(), all.data() + checked.size(), kTrailerSize) != 0) return std::nullopt;
  const std::uint8_t* p = all.data() + sizeof(kMagic);
  const std::uint32_t schema = le::get_u32(p);
  const std::uint8_t codec = p[4];
  const std::uint64_t raw_size = le::get_u64(p + 5);
  const std::uint64_t stored_size = le::get_u64(p + 13);
  if (schema != static_cast<std::uint32_t>(kKeySchemaVersion) ||
      stored_size != checked.size() - kPrefixSize || raw_size > kMaxRecordBytes) {
    return std::nullopt;
  }
  const std::span<const std::uint8_t> stored = checked.subspan(kPrefixSize);
  ByteBuffer raw;
  std::span<const std::uint8_t> body = stored;
  if (codec == static_cast<std::uint8_t>(Compression::kZstd)) {
    auto decompressed = decompress(Compression::kZstd, stored, static_cast<std::size_t>(raw_size));
    if (!decompressed) return std::nullopt;
    raw = std::move(*decompressed);
    body = raw.span();
  } else if (codec != static_cast<std::uint8_t>(Compression::kNone) || raw_size != stored.size()) {
    return std::nullopt;
  }

  Reader r(body);
  if (!same_inputs(r, inputs)) return std::nullopt;
  std::string_view head;
  std::uint32_t files = 0;
  auto scan = std::make_shared<IncludeScan>();
  if (!r.text(head) || !r.u32(files)) return std::nullopt;
  for (std::uint32_t i = 0; i < files; ++i) {
    FileId id;
    if (!r.u64(id.device) || !r.u64(id.inode)) return std::nullopt;
    scan->files.push_back(id);
  }
  std::uint32_t probes = 0;
  if (!r.u32(probes)) return std::nullopt;
  for (std::uint32_t i = 0; i < probes; ++i) {
    std::string_view path;
    std::uint8_t found = 0;
    if (!r.text(path) || !r.u8(found) || found > 1) return std::nullopt;
    ScanProbe& probe = scan->probes.emplace_back();
    probe.path = std::string(path);
    if (found == 1 && !read_stamp(r, probe.stamp.emplace())) return std::nullopt;
  }
  if (!r.done() || scan->probes.empty()) return std::nullopt;
  if (!probes_hold(*scan, env_)) return std::nullopt;
  return ScanRecord{std::move(scan), std::make_shared<const std::string>(head)};
}

void ScanRecords::keep(const ScanInputs& inputs, const IncludeScan& scan, const std::string& head) {
  if (!scan.reusable || !scan.unkeyable.empty() || scan.probes.empty() || !trusted()) return;
  Writer raw;
  write_inputs(raw, inputs);
  const std::string name = record_name(raw.bytes());
  raw.text(head);
  raw.u32(static_cast<std::uint32_t>(scan.files.size()));
  for (const FileId& id : scan.files) {
    raw.u64(id.device);
    raw.u64(id.inode);
  }
  raw.u32(static_cast<std::uint32_t>(scan.probes.size()));
  for (const ScanProbe& probe : scan.probes) {
    raw.text(probe.path);
    raw.u8(probe.stamp.has_value() ? 1 : 0);
    if (probe.stamp) write_stamp(raw, *probe.stamp);
  }
  if (raw.bytes().size() > kMaxRecordBytes) return;

  // Paths and digests compress about tenfold.
  Compression codec = Compression::kNone;
  std::optional<std::vector<std::uint8_t>> packed;
  if (compression_available(Compression::kZstd)) {
    packed = compress(Compression::kZstd, raw.bytes());
    if (packed) codec = Compression::kZstd;
  }
  const std::vector<std::uint8_t>& body = packed ? *packed : raw.bytes();
  std::vector<std::uint8_t> file(kPrefixSize);
  std::memcpy(file.data(), kMagic, sizeof(kMagic));
  le::put_u32(file.data() + sizeof(kMagic), static_cast<std::uint32_t>(kKeySchemaVersion));
  file[sizeof(kMagic) + 4] = static_cast<std::uint8_t>(codec);
  le::put_u64(file.data() + sizeof(kMagic) + 5, raw.bytes().size());
  le::put_u64(file.data() + sizeof(kMagic) + 13, body.size());
  file.insert(file.end(), body.begin(), body.end());
  const Checksum128 sum = checksum_of(file);
  file.insert(file.end(), sum.begin(), sum.end());

  if (!env_.create_dirs(dir_, 0700).is_ok()) return;
  if (!env_.write_file_atomic(dir_ + "/" + name, file, /*sync=*/false).is_ok()) return;
  MutexLock lock(mutex_);
  ++written_;
  if (!counted_ || *counted_ + written_ > max_records_) trim(name);
}

void ScanRecords::clear() {
  auto entries = env_.list_dir(dir_);
  if (!entries) return;
  MutexLock lock(mutex_);
  for (const auto& entry : *entries) {
    if (entry.name.ends_with(".scan")) (void)env_.remove_file(dir_ + "/" + entry.name);
  }
  counted_.reset();
  written_ = 0;
}

void ScanRecords::trim(const std::string& just_written) {
  auto entries = env_.list_dir(dir_);
  if (!entries) return;
  std::erase_if(*entries, [](const DirEntry& entry) { return !entry.name.ends_with(".scan"); });
  written_ = 0;
  counted_ = entries->size();
  if (entries->size() <= max_records_) return;  // a listing, no stat
  std::vector<std::pair<std::int64_t, std::string>> records;
  for (const auto& entry : *entries) {
    if (entry.name == just_written) continue;  // its mtime may tie with older ones
    const std::string path = dir_ + "/" + entry.name;
    if (auto stamp = env_.stamp(path)) records.emplace_back(stamp->modified_ns, path);
  }
  // The oldest half goes: a trim then comes once per max_records_ / 2 writes.
  std::sort(records.begin(), records.end());
  const std::size_t keep = max_records_ / 2 > 0 ? max_records_ / 2 - 1 : 0;  // and just_written
  const std::size_t remove = records.size() - std::min(records.size(), keep);
  for (std::size_t i = 0; i < remove; ++i) (void)env_.remove_file(records[i].second);
  counted_ = records.size() - remove + 1;
}

}  // namespace kcache
