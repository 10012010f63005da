// The user tier on arbitrary files: the input is split into a log and a
// hint (its first 4 bytes, little-endian, modulo what follows, give the
// hint's length), written as <db>.ukdb and <db>.ukdx of a private folder,
// and used through the tier as a program would: get every key either file
// names, list, verify, put, verify --repair. Once as given, once "sealed":
// valid headers of one generation put in front of both parts, every
// 32-byte hint record and every entry in the log given a valid check, so
// that hostile offsets, sizes and records reach the code behind the checks.
//
// Invariants: no call fails but for I/O (a lookup is a hit or a miss, a
// damaged record a reported miss); a hit is an entry whose key is the one
// asked for; a put is then a hit with the bytes put; verify --repair leaves
// a database that verify finds clean, and that still serves every key that
// was a hit before it and that the log holds (repair never loses a good
// entry; a hit the log itself had removed, served while a damaged hint
// record hid the removal, may go).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/log.h"
#include "format/entry.h"
#include "fuzz_support.h"
#include "store/user/user_log.h"
#include "store/user/user_tier.h"

namespace kcache::fuzz {
namespace {

class Events final : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string&, const Status&) override {}
};

const std::string& dir() {
  static const std::string instance = private_dir("kcache-fuzz-user-log-") + "/v";
  return instance;
}

Entry probe_entry() {
  Entry entry;
  entry.material = "kcache.key 2\nbackend fuzz\nsource 5\nprobe";
  entry.key = CacheKey(xxh3_128(entry.material));
  entry.created_unix = 1700000000;
  static const std::uint8_t payload[] = {'b', 'i', 'n', 'a', 'r', 'y'};
  entry.storage = ByteBuffer::copy_of(payload);
  entry.payload_size = sizeof payload;
  return entry;
}

// The keys a scan of the log finds present (their newest record an entry):
// what the log holds, whatever the hint says. `met` gets every key the scan
// meets.
std::set<CacheKey> present_keys(const std::string& log_path, std::set<CacheKey>* met = nullptr) {
  std::set<CacheKey> present;
  auto log = Env::posix().open_random_access(log_path);
  if (!log) return present;
  auto log_size = (*log)->size();
  const std::uint64_t size = log_size ? *log_size : 0;
  for (std::uint64_t offset = userlog::kHeaderSize; offset < size;) {
    auto step = userlog::scan_step(**log, offset, size);
    if (!step || step->kind == userlog::ScanStep::Kind::kEnd) break;
    if (step->kind == userlog::ScanStep::Kind::kEntry) present.insert(step->record.key);
    if (step->kind == userlog::ScanStep::Kind::kRemoval) present.erase(step->record.key);
    if (met != nullptr && step->kind != userlog::ScanStep::Kind::kDamaged) {
      met->insert(step->record.key);
    }
    KCACHE_FUZZ_CHECK(step->next > offset, "the scan does not move on");
    offset = step->next;
  }
  return present;
}

// Keys the files name: every hint record's, every record's the log scan
// meets, and the probe's.
std::set<CacheKey> named_keys(std::span<const std::uint8_t> hint, const std::string& log_path) {
  std::set<CacheKey> keys{probe_entry().key};
  for (std::size_t at = userlog::kHeaderSize; at + userlog::kHintRecordSize <= hint.size();
       at += userlog::kHintRecordSize) {
    CacheKey::Bytes bytes;
    std::memcpy(bytes.data(), hint.data() + at, bytes.size());
    keys.insert(CacheKey(bytes));
  }
  (void)present_keys(log_path, &keys);
  return keys;
}

bool io_only(const Status& status) {
  return status.is_ok() || status.code() == StatusCode::kIoError;
}

void check(std::span<const std::uint8_t> log, std::span<const std::uint8_t> hint) {
  std::error_code ignored;
  std::filesystem::remove_all(dir(), ignored);
  std::filesystem::create_directories(dir());
  const std::string log_path = dir() + "/db.ukdb";
  write_scratch_file(log_path, log);
  write_scratch_file(dir() + "/db.ukdx", hint);
  const std::set<CacheKey> keys = named_keys(hint, log_path);

  NoSyncEnv env;
  const Logger quiet(LogLevel::kQuiet, nullptr);
  Events events;
  auto tier = make_user_tier({dir(), /*sync=*/false}, env, quiet, events);
  const DbNames db{"db", "db"};
  std::set<CacheKey> hits;
  for (const CacheKey& key : keys) {
    auto got = tier->get(db, key);
    KCACHE_FUZZ_CHECK(got.is_ok(), got.status().to_string());
    if (got->has_value()) {
      KCACHE_FUZZ_CHECK((*got)->key == key, "a hit for another key");
      hits.insert(key);
    }
  }
  auto listed = tier->list("db");
  KCACHE_FUZZ_CHECK(listed.is_ok(), listed.status().to_string());
  VerifyReport report;
  KCACHE_FUZZ_CHECK(tier->verify(false, report).is_ok(), "verify failed");

  const Entry probe = probe_entry();
  auto encoded = encode_entry(probe, Compression::kNone);
  Status put = tier->put("db", probe, *encoded);
  KCACHE_FUZZ_CHECK(io_only(put), put.to_string());
  if (put.is_ok()) {
    auto got = tier->get(db, probe.key);
    KCACHE_FUZZ_CHECK(got.is_ok() && got->has_value(), "a put is not a hit");
    KCACHE_FUZZ_CHECK(
        (*got)->payload().size() == probe.payload_size &&
            std::equal(probe.payload().begin(), probe.payload().end(), (*got)->payload().begin()),
        "a put reads back different bytes");
    hits.insert(probe.key);
  }

  const std::set<CacheKey> present = present_keys(log_path);
  VerifyReport repaired;
  KCACHE_FUZZ_CHECK(tier->verify(true, repaired).is_ok(), "verify --repair failed");
  auto fresh = make_user_tier({dir(), /*sync=*/false}, env, quiet, events);
  VerifyReport clean;
  KCACHE_FUZZ_CHECK(fresh->verify(false, clean).is_ok(), "verify failed after a repair");
  for (const auto& problem : clean.problems) {
    KCACHE_FUZZ_CHECK(false, "left after --repair: " + problem.path + ": " + problem.problem);
  }
  for (const CacheKey& key : hits) {
    if (!present.contains(key)) continue;
    auto got = fresh->get(db, key);
    KCACHE_FUZZ_CHECK(got.is_ok() && got->has_value() && (*got)->key == key,
                      "repair lost " + key.hex());
  }
}

// Headers of one generation in front of both parts; every hint record and
// every entry record (at 8-aligned offsets) given a valid check.
void check_sealed(std::span<const std::uint8_t> log_body, std::span<const std::uint8_t> hint_body) {
  const userlog::Generation generation{7, 7, 7};
  std::vector<std::uint8_t> log;
  const auto log_header = userlog::encode_header(userlog::FileKind::kLog, generation);
  log.insert(log.end(), log_header.begin(), log_header.end());
  log.insert(log.end(), log_body.begin(), log_body.end());
  for (std::size_t at = userlog::kHeaderSize; at + kEntryHeaderSize <= log.size();
       at += userlog::kAlignment) {
    if (std::memcmp(log.data() + at, "KCEN", 4) != 0) continue;
    auto size = entry_size({log.data() + at, kEntryHeaderSize});
    if (size && *size <= log.size() - at) {
      reseal_entry(std::span(log).subspan(at, static_cast<std::size_t>(*size)));
    }
  }
  std::vector<std::uint8_t> hint;
  const auto hint_header = userlog::encode_header(userlog::FileKind::kHint, generation);
  hint.insert(hint.end(), hint_header.begin(), hint_header.end());
  for (std::size_t at = 0; at + userlog::kHintRecordSize <= hint_body.size();
       at += userlog::kHintRecordSize) {
    userlog::HintRecord record;
    CacheKey::Bytes key;
    std::memcpy(key.data(), hint_body.data() + at, key.size());
    record.key = CacheKey(key);
    record.offset = le::get_u64(hint_body.data() + at + 16) % (log.size() + 64);
    record.offset = record.offset / userlog::kAlignment * userlog::kAlignment;
    if (record.offset < userlog::kHeaderSize) record.offset = userlog::kHeaderSize;
    record.size = le::get_u32(hint_body.data() + at + 24) % (log.size() + 64);
    const auto encoded = userlog::encode_hint(record);
    hint.insert(hint.end(), encoded.begin(), encoded.end());
  }
  check(log, hint);
}

}  // namespace
}  // namespace kcache::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::fuzz;
  if (size < 4) return 0;
  std::span<const std::uint8_t> rest(data + 4, size - 4);
  const std::size_t hint_size = kcache::le::get_u32(data) % (rest.size() + 1);
  const auto hint = rest.first(hint_size);
  const auto log = rest.subspan(hint_size);
  check(log, hint);
  check_sealed(log, hint);
  return 0;
}
