// The package open path on an arbitrary file: the input is written to a
// scratch file in a private folder and opened as a .kdb package
// (KdbReader::open, every slot read and decoded), as stored and with its
// index checksum (and then its entries' checksums) recomputed. (The user
// tier's files: fuzz_user_log.)
//
// Invariants: a refusal is kCorruption; an opened file is consistent with
// its header, its slots are sorted, lie in [64, index) and read back as the
// file's bytes; every slot can be found; an entry decodes only under its
// slot's key; a signed package has a digest per slot and its signature
// can be checked (it holds only when the input is a seed: any change to
// the bytes it covers breaks it); and what was read writes back
// (write_kdb) to a package that reads the same.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>

#include "format/entry.h"
#include "format/kdb_file.h"
#include "fuzz_support.h"
#include "store/system/trusted_keys.h"

namespace kcache::fuzz {
namespace {

struct Paths {
  std::string kdb;
  std::string rewritten;
};

const Paths& paths() {
  static const Paths instance = [] {
    const std::string& dir = private_dir("kcache-fuzz-kdb-");
    return Paths{dir + "/input.kdb", dir + "/rewritten.kdb"};
  }();
  return instance;
}

// Opens `bytes` as a .kdb and checks it. Returns the slots it found (empty
// when it did not open).
std::vector<KdbSlot> check_kdb(std::span<const std::uint8_t> bytes) {
  NoSyncEnv env;
  write_scratch_file(paths().kdb, bytes);
  auto reader = KdbReader::open(paths().kdb, env);
  if (!reader) {
    KCACHE_FUZZ_CHECK(reader.status().code() == StatusCode::kCorruption,
                      reader.status().to_string());
    return {};
  }

  // The header agrees with the file.
  const std::uint64_t count = le::get_u64(bytes.data() + 16);
  const std::uint64_t index_offset = le::get_u64(bytes.data() + 24);
  const std::uint64_t meta_size = le::get_u32(bytes.data() + 40);
  const auto& slots = (*reader)->slots();
  KCACHE_FUZZ_CHECK(slots.size() == count, "slot count differs from the header's");
  const bool is_signed = (le::get_u32(bytes.data() + 12) & kKdbFlagSigned) != 0;
  KCACHE_FUZZ_CHECK((*reader)->is_signed() == is_signed, "the signed flag is misread");
  const std::uint64_t trailer = is_signed ? count * 32 + kKdbSignatureBlockSize : 0;
  KCACHE_FUZZ_CHECK(
      index_offset >= kKdbHeaderSize && index_offset <= bytes.size() &&
          index_offset + count * kKdbIndexEntrySize + meta_size + trailer == bytes.size(),
      "opened a file whose header does not match its size");
  if (is_signed) {
    KCACHE_FUZZ_CHECK(!(*reader)->signed_message().empty(), "a signed package has no message");
    (void)signature_problem(**reader);  // must not crash, whatever the bytes
  }
  const std::string_view meta_text =
      as_text(bytes.data() + index_offset + count * kKdbIndexEntrySize, meta_size);
  KCACHE_FUZZ_CHECK(encode_fields((*reader)->metadata()) == meta_text,
                    "metadata differs from the stored text");

  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> contents;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const KdbSlot& slot = slots[i];
    KCACHE_FUZZ_CHECK(i == 0 || slots[i - 1].key < slot.key, "slots are not sorted and distinct");
    // Written so that it cannot overflow: the slot lies within [64, index).
    KCACHE_FUZZ_CHECK(slot.offset >= kKdbHeaderSize && slot.offset <= index_offset &&
                          slot.size <= index_offset - slot.offset,
                      "slot " + std::to_string(i) + " lies outside the entries section");
    auto found = (*reader)->find(slot.key);
    KCACHE_FUZZ_CHECK(found && found->offset == slot.offset && found->size == slot.size,
                      "a listed slot cannot be found");
    auto read = (*reader)->read(slot);
    KCACHE_FUZZ_CHECK(read.is_ok(),
                      "a slot inside the file cannot be read: " + read.status().to_string());
    KCACHE_FUZZ_CHECK(
        read->size == slot.size &&
            (slot.size == 0 ||
             std::memcmp(read->data.get(), bytes.data() + slot.offset, slot.size) == 0),
        "a slot reads other bytes than the file holds");
    KCACHE_FUZZ_CHECK(((*reader)->entry_digest(slot) != nullptr) == is_signed,
                      "a signed package's slot has no digest, or an unsigned one has");
    auto entry = decode_entry(*read, &slot.key);
    if (entry) {
      KCACHE_FUZZ_CHECK(entry->key == slot.key, "an entry decoded under another slot's key");
    } else {
      KCACHE_FUZZ_CHECK(entry.status().code() == StatusCode::kCorruption ||
                            entry.status().code() == StatusCode::kNotSupported,
                        entry.status().to_string());
    }
    contents.emplace_back(
        slot.key, std::vector<std::uint8_t>(read->data.get(), read->data.get() + read->size));
  }
  // A key that is not listed is not found.
  CacheKey::Bytes absent_bytes{};
  if (!slots.empty()) absent_bytes = slots.front().key.bytes();
  absent_bytes[CacheKey::kSize - 1] ^= 1;
  const CacheKey absent(absent_bytes);
  bool listed = false;
  for (const KdbSlot& slot : slots) listed = listed || slot.key == absent;
  KCACHE_FUZZ_CHECK((*reader)->find(absent).has_value() == listed, "find() disagrees with slots()");

  // What was read writes back to a package that reads the same.
  Status written = write_kdb(env, paths().rewritten, contents, (*reader)->metadata());
  KCACHE_FUZZ_CHECK(written.is_ok(), "cannot rewrite an opened package: " + written.to_string());
  auto again = KdbReader::open(paths().rewritten, env);
  KCACHE_FUZZ_CHECK(again.is_ok(),
                    "a rewritten package does not open: " + again.status().to_string());
  KCACHE_FUZZ_CHECK((*again)->metadata() == (*reader)->metadata(), "rewritten metadata differs");
  KCACHE_FUZZ_CHECK((*again)->slots().size() == contents.size(), "rewritten slot count differs");
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const KdbSlot& slot = (*again)->slots()[i];
    auto read = (*again)->read(slot);
    KCACHE_FUZZ_CHECK(
        slot.key == contents[i].first && read.is_ok() && read->size == contents[i].second.size() &&
            (read->size == 0 ||
             std::memcmp(read->data.get(), contents[i].second.data(), read->size) == 0),
        "rewritten slot " + std::to_string(i) + " differs");
  }
  return slots;
}

}  // namespace
}  // namespace kcache::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::fuzz;
  std::vector<std::uint8_t> bytes(data, data + size);
  check_kdb(bytes);

  // Past the index checksum, and then past each entry's.
  if (reseal_kdb(bytes)) {
    std::vector<kcache::KdbSlot> slots = check_kdb(bytes);
    bool resealed = false;
    for (const kcache::KdbSlot& slot : slots) {
      resealed = reseal_entry(std::span(bytes).subspan(slot.offset, slot.size)) || resealed;
    }
    if (resealed) check_kdb(bytes);
  }

  return 0;
}
