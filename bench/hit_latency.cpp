// Warm hit latency of the user and system tiers against the page-cache
// floor measured in the same run (docs/benchmarks.md).
//
// For each payload size, N distinct entries are stored three ways: in a user
// tier (one log per database), in a .kdb read by the system tier, and as
// raw files holding the same bytes, one per entry (the floor). All
// are read once so their pages sit in the OS page cache; no tier keeps
// anything in process memory. Rounds then go through the keys in a fresh
// shuffled order, one pass per kind, the order of kinds rotating each
// round so that all share the machine's noise, and each pass starting with
// the CPU caches emptied (bench_support.h, CacheFlusher: else a pass finds
// what the pass before it left warm; the pread pass, which copies every
// byte of the package, left much of it in the last-level cache for the
// system tier's pass two passes later):
//   floor   open + pread + close of the entry's bytes into a reused buffer
//   pread   pread of the same bytes from the .kdb, open all along, into a
//           reused buffer: the floor for the system tier, which keeps its
//           package open
//   user    UserTier::get (index lookup, fstat, and a view of the mapped
//           log: its checksum was verified on the first use, in the
//           warm-up) + the key material comparison Cache does on every hit
//   system  the same through the system tier (binary search, fstat, and a
//           view of the mapped package: its checksum was verified on the
//           first use, in the warm-up)
//   copied  a system hit, then a memcpy of the bytes lent into a reused
//           buffer: what a caller that needs its own copy pays
//   read    Env::read_file of the floor's file (what a tier with one file
//           per entry pays to read it), and decode: decode_entry +
//           comparison of bytes already in memory
// A last part times Cache::get_or_compile on hits through the public API
// (memory tier off), which adds key derivation (the key text and its
// XXH3-128), also timed alone (Cache::prepare, what a hit derives).
//
// Usage: hit_latency [--rounds=R] [--scale=F] [--api-entries=N] [--sizes=8,64,1024]
//   --scale multiplies the entry counts (4096, 2048, 256); --smoke is
//   --rounds=1 --scale=0.01 --api-entries=8.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "base/log.h"
#include "bench_support.h"
#include "env/env.h"
#include "format/entry.h"
#include "format/kdb_file.h"
#include "key/key_builder.h"
#include "store/system/system_tier.h"
#include "store/user/user_tier.h"
#include "upkeep/stats_counters.h"
#include "upkeep/stats_file.h"

namespace kcache::bench {
namespace {

constexpr std::string_view kArch = "pthread-skylake-avx512";
constexpr int kUnits = 2;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "hit_latency: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status& status, const std::string& what) {
  if (!status.is_ok()) fail(what + ": " + status.message());
}

std::vector<std::uint8_t> random_bytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<std::uint8_t> out(size);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const std::uint64_t word = random();
    std::memcpy(out.data() + i, &word, 8);
  }
  for (; i < size; ++i) out[i] = static_cast<std::uint8_t>(random());
  return out;
}

// Returns `payload_size` random bytes derived from the request, as fast as
// it can: this benchmark only times hits.
class SizedCompiler final : public Compiler {
 public:
  explicit SizedCompiler(std::size_t payload_size)
      : identity_(pocl_like_identity()), payload_size_(payload_size) {}
  const CompilerIdentity& identity() const override { return identity_; }
  Result<Target> resolve_target(const Target& /*requested*/) const override {
    return Target{std::string(kArch), "", kUnits};
  }
  Result<CompileOutput> compile(const KernelRequest& request, const Target& /*target*/) override {
    CompileOutput output;
    output.binary = random_bytes(payload_size_, std::hash<std::string>{}(request.source));
    output.metadata = {{kFormatField, "poclbin"}, {kWarmedField, "yes"}};
    return output;
  }

 private:
  CompilerIdentity identity_;
  std::size_t payload_size_;
};

KernelRequest make_request(std::size_t size_index, std::size_t i) {
  KernelRequest request;
  request.source = "#define VARIANT " + std::to_string(size_index) + "_" + std::to_string(i) +
                   "\n" + std::string(kGemmSource);
  request.kernel_names = {"gemm", "scale"};
  request.options = "-cl-fast-relaxed-math -cl-mad-enable -D TILE=16 -D ALPHA=1.0f";
  return request;
}

class CountingEvents final : public TierEvents {
 public:
  void on_corrupt(std::string_view tier, const std::string& where, const Status& problem) override {
    fail("corrupt " + std::string(tier) + " entry " + where + ": " + problem.message());
  }
};

struct Item {
  CacheKey key;
  std::string material;
  std::size_t bytes = 0;   // encoded entry size
  std::string floor_path;  // raw copy of the encoded entry
  std::uint64_t kdb_offset = 0;
};

struct TierResult {
  std::size_t payload = 0;
  std::size_t count = 0;
  std::size_t entry_bytes = 0;
  std::size_t material_bytes = 0;
  Summary floor, pread, user, system, copied, read, decode;
};

struct ApiResult {
  std::size_t payload = 0;
  std::size_t count = 0;
  Summary user, system, key;
};

volatile std::uint64_t g_sink = 0;  // keeps reads from being optimized away

double floor_read(const Item& item, std::vector<std::uint8_t>& buffer) {
  const auto start = Clock::now();
  const int fd = ::open(item.floor_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open " + item.floor_path);
  std::size_t done = 0;
  while (done < item.bytes) {
    const ssize_t n =
        ::pread(fd, buffer.data() + done, item.bytes - done, static_cast<off_t>(done));
    if (n <= 0) fail("cannot read " + item.floor_path);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  const auto end = Clock::now();
  g_sink = g_sink + buffer[item.bytes - 1];
  return micros_since(start, end);
}

double open_pread(int fd, const Item& item, std::vector<std::uint8_t>& buffer) {
  const auto start = Clock::now();
  std::size_t done = 0;
  while (done < item.bytes) {
    const ssize_t n = ::pread(fd, buffer.data() + done, item.bytes - done,
                              static_cast<off_t>(item.kdb_offset + done));
    if (n <= 0) fail("cannot read the .kdb");
    done += static_cast<std::size_t>(n);
  }
  const auto end = Clock::now();
  g_sink = g_sink + buffer[item.bytes - 1];
  return micros_since(start, end);
}

// A tier hit as Cache sees it: the verified entry, then the material check;
// with `copy_to`, the binary is then copied there.
double tier_hit(Tier& tier, const DbNames& names, const Item& item,
                std::vector<std::uint8_t>* copy_to = nullptr) {
  const auto start = Clock::now();
  auto got = tier.get(names, item.key);
  const bool hit = got && got->has_value() && (**got).material == item.material;
  if (hit && copy_to != nullptr) {
    const auto binary = (**got).payload();
    std::memcpy(copy_to->data(), binary.data(), binary.size());
  }
  const auto end = Clock::now();
  if (!hit) fail(std::string(tier.name()) + " tier missed " + item.key.hex());
  g_sink = g_sink + (**got).payload().back() + (copy_to != nullptr ? (*copy_to)[0] : 0);
  return micros_since(start, end);  // the entry is freed after the clock stops
}

TierResult measure_tiers(std::size_t size_index, std::size_t payload, std::size_t count,
                         int rounds) {
  TempDir dir("kcache-bench-hit-");
  Env& env = Env::posix();
  const Logger log(LogLevel::kWarning, nullptr);
  CountingEvents events;
  const std::string user_dir = dir.path() + "/user";
  const std::string system_dir = dir.path() + "/system";
  const std::string floor_dir = dir.path() + "/floor";
  check(env.create_dirs(system_dir, 0700), "create " + system_dir);
  auto user = make_user_tier({user_dir, /*sync=*/false}, env, log, events);
  auto system = make_system_tier(system_dir, {}, env, log, events);

  SizedCompiler compiler(payload);
  const Target target = *compiler.resolve_target({});
  const std::string db = target.db_basename();
  const DbNames names{db, db};

  std::vector<Item> items(count);
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> packaged;
  packaged.reserve(count);
  TierResult result;
  result.payload = payload;
  result.count = count;
  for (std::size_t i = 0; i < count; ++i) {
    const KernelRequest request = make_request(size_index, i);
    auto material = build_key_material(request, compiler.identity(), target, env);
    if (!material) fail("key material: " + material.status().message());
    Item& item = items[i];
    item.material = material->serialize();
    item.key = material->digest();
    auto output = compiler.compile(request, target);
    Entry entry;
    entry.key = item.key;
    entry.created_unix = env.now_unix();
    entry.material = item.material;
    entry.metadata = output->metadata;
    entry.storage = ByteBuffer::copy_of(output->binary);
    entry.payload_size = output->binary.size();
    auto encoded = encode_entry(entry, Compression::kNone);
    if (!encoded) fail("encode: " + encoded.status().message());
    // Twice: the first record is replaced, so that the log holds dead
    // bytes and the prune below compacts it (the figure asked for is the
    // hit after compaction, on a log written whole).
    check(user->put(db, entry, *encoded), "user put");
    check(user->put(db, entry, *encoded), "user put again");

    const std::string hex = item.key.hex();
    const std::string shard = hex.substr(0, 2);
    item.bytes = encoded->size();
    item.floor_path = floor_dir + "/" + shard + "/" + hex;
    check(env.create_dirs(floor_dir + "/" + shard, 0700), "create floor folder");
    check(env.write_file_atomic(item.floor_path, *encoded, /*sync=*/false), "write floor file");
    result.entry_bytes = item.bytes;
    result.material_bytes = item.material.size();
    packaged.emplace_back(item.key, std::move(*encoded));
  }
  {
    auto pruned = user->prune({});
    if (!pruned || pruned->databases_compacted != 1) fail("the user log was not compacted");
  }
  const std::string kdb_path = system_dir + "/" + db + ".kdb";
  check(write_kdb(env, kdb_path, packaged, {{"db", db}}), "write .kdb");
  packaged.clear();
  packaged.shrink_to_fit();
  {
    auto kdb = KdbReader::open(kdb_path, env);
    if (!kdb) fail("open .kdb: " + kdb.status().message());
    for (Item& item : items) item.kdb_offset = (*kdb)->find(item.key)->offset;
  }
  const int kdb_fd = ::open(kdb_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (kdb_fd < 0) fail("cannot open " + kdb_path);

  // Written back before the timing, so that no tier is read while the
  // kernel writes its pages out.
  ::sync();
  // Everything once, so that every page is in the page cache and every
  // first-use cost (opening the .kdb, malloc growing its arenas) is paid.
  std::vector<std::uint8_t> buffer(result.entry_bytes);
  std::vector<std::uint8_t> copy_buffer(payload);
  std::vector<ByteBuffer> in_memory;
  for (const Item& item : items) {
    floor_read(item, buffer);
    open_pread(kdb_fd, item, buffer);
    tier_hit(*user, names, item);
    tier_hit(*system, names, item);
    auto bytes = env.read_file(item.floor_path);
    if (!bytes) fail("read " + item.floor_path);
    in_memory.push_back(std::move(*bytes));
  }

  enum Kind { kFloor, kPread, kUser, kSystem, kCopied, kRead, kDecode, kKinds };
  std::vector<double> samples[kKinds];
  for (auto& s : samples) s.reserve(count * static_cast<std::size_t>(rounds));
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle_random(42 + size_index);
  CacheFlusher flusher;
  for (int round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), shuffle_random);
    for (int k = 0; k < kKinds; ++k) {
      const auto kind = static_cast<Kind>((k + round) % kKinds);
      flusher.flush();
      for (std::size_t i : order) {
        const Item& item = items[i];
        double micros = 0;
        switch (kind) {
          case kFloor:
            micros = floor_read(item, buffer);
            break;
          case kPread:
            micros = open_pread(kdb_fd, item, buffer);
            break;
          case kCopied:
            micros = tier_hit(*system, names, item, &copy_buffer);
            break;
          case kUser:
            micros = tier_hit(*user, names, item);
            break;
          case kSystem:
            micros = tier_hit(*system, names, item);
            break;
          case kRead: {
            const auto start = Clock::now();
            auto bytes = env.read_file(item.floor_path);
            const auto end = Clock::now();
            if (!bytes) fail("read " + item.floor_path);
            micros = micros_since(start, end);
            break;
          }
          case kDecode: {
            const auto start = Clock::now();
            auto entry = decode_entry(in_memory[i], &item.key);
            const bool ok = entry && entry->material == item.material;
            const auto end = Clock::now();
            if (!ok) fail("decode " + item.key.hex());
            micros = micros_since(start, end);
            break;
          }
          case kKinds:
            break;
        }
        samples[kind].push_back(micros);
      }
    }
  }
  ::close(kdb_fd);
  result.floor = summarize(std::move(samples[kFloor]));
  result.pread = summarize(std::move(samples[kPread]));
  result.copied = summarize(std::move(samples[kCopied]));
  result.user = summarize(std::move(samples[kUser]));
  result.system = summarize(std::move(samples[kSystem]));
  result.read = summarize(std::move(samples[kRead]));
  result.decode = summarize(std::move(samples[kDecode]));
  return result;
}

// Hits through Cache::get_or_compile: key derivation + system probe + tier.
ApiResult measure_api(std::size_t size_index, std::size_t payload, std::size_t count, int rounds) {
  TempDir dir("kcache-bench-api-");
  const std::string system_dir = dir.path() + "/system";
  check(Env::posix().create_dirs(system_dir, 0700), "create " + system_dir);
  CacheOptions options;
  options.cache_dir = dir.path() + "/cache";
  options.system_db_path = system_dir;
  options.memory_cache_size = 0;
  options.log_level = LogLevel::kError;  // the (expected) missing .kdb warning
  options.read_environment = false;
  SizedCompiler compiler(payload);

  std::vector<KernelRequest> requests;
  for (std::size_t i = 0; i < count; ++i) requests.push_back(make_request(size_index, i));

  auto user_cache = Cache::open(options);
  if (!user_cache) fail("Cache::open: " + user_cache.status().message());
  std::string db;
  for (const auto& request : requests) {
    auto kernel = (*user_cache)->get_or_compile(request, compiler);
    if (!kernel || kernel->tier != TierKind::kCompiled) fail("populating the API cache");
    db = kernel->db;
  }
  auto exported = CacheAdmin(**user_cache).export_db(db, system_dir + "/" + db + ".kdb");
  if (!exported) fail("export: " + exported.status().message());
  // `user_cache` has already seen the package missing and keeps reading
  // the user tier; a cache opened now finds it first.
  auto system_cache = Cache::open(options);
  if (!system_cache) fail("Cache::open: " + system_cache.status().message());

  auto hit = [&](Cache& cache, const KernelRequest& request, TierKind expected) {
    const auto start = Clock::now();
    auto kernel = cache.get_or_compile(request, compiler);
    const auto end = Clock::now();
    if (!kernel || kernel->tier != expected || kernel->binary().size() != payload) {
      fail("expected a " + std::string(tier_name(expected)) + " hit");
    }
    g_sink = g_sink + kernel->binary().back();
    return micros_since(start, end);
  };
  for (const auto& request : requests) {
    hit(**user_cache, request, TierKind::kUser);
    hit(**system_cache, request, TierKind::kSystem);
  }
  auto derive_key = [&](const KernelRequest& request) {
    const auto start = Clock::now();
    auto prepared = AdvancedCache(**user_cache).prepare(request, request.target, compiler);
    const auto end = Clock::now();
    if (!prepared) fail("prepare: " + prepared.status().message());
    g_sink = g_sink + prepared->key().bytes()[0];
    return micros_since(start, end);
  };
  std::vector<double> user, system, key;
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle_random(7 + size_index);
  for (int round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), shuffle_random);
    for (int k = 0; k < 3; ++k) {
      const int pass = (k + round) % 3;
      for (std::size_t i : order) {
        if (pass == 0) {
          user.push_back(hit(**user_cache, requests[i], TierKind::kUser));
        } else if (pass == 1) {
          system.push_back(hit(**system_cache, requests[i], TierKind::kSystem));
        } else {
          key.push_back(derive_key(requests[i]));
        }
      }
    }
  }
  return {payload, count, summarize(std::move(user)), summarize(std::move(system)),
          summarize(std::move(key))};
}

std::string size_name(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                             : std::to_string(bytes >> 10) + " KiB";
}

std::string cell(const Summary& s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f / %.2f", s.median, s.p90);
  return text;
}

std::string ratio(double a, double b) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", b > 0 ? a / b : 0.0);
  return text;
}

int run(int argc, char** argv) {
  const Args args(argc, argv);
  if (auto bad = args.unknown({"--rounds", "--scale", "--api-entries", "--sizes", "--smoke"})) {
    std::fprintf(stderr,
                 "hit_latency: unknown argument %s\nusage: hit_latency [--rounds=R] [--scale=F] "
                 "[--api-entries=N] [--sizes=8,64,1024] [--smoke]\n",
                 bad->c_str());
    return 2;
  }
  const bool smoke = args.flag("smoke");
  const int rounds = static_cast<int>(args.number("rounds", smoke ? 1 : 10));
  const double scale = args.number("scale", smoke ? 0.01 : 1.0);
  const auto api_entries = static_cast<std::size_t>(args.number("api-entries", smoke ? 8 : 1024));
  std::vector<std::size_t> sizes_kib;
  {
    std::stringstream list(args.get("sizes").value_or("8,64,1024"));
    for (std::string part; std::getline(list, part, ',');) {
      sizes_kib.push_back(std::stoul(part));
    }
  }
  auto default_count = [](std::size_t kib) -> std::size_t {
    // 128 MiB of entries, far more than the CPU caches hold, within 256 to
    // 4096 entries: 4096 x 8 KiB, 2048 x 64 KiB, 256 x 1 MiB.
    return std::clamp<std::size_t>((128u << 10) / kib, 256, 4096);
  };

  std::vector<TierResult> tiers;
  std::vector<ApiResult> apis;
  for (std::size_t s = 0; s < sizes_kib.size(); ++s) {
    const std::size_t payload = sizes_kib[s] << 10;
    const auto count = std::max<std::size_t>(
        2, static_cast<std::size_t>(static_cast<double>(default_count(sizes_kib[s])) * scale));
    std::fprintf(stderr, "hit_latency: %s x %zu entries, %d rounds...\n",
                 size_name(payload).c_str(), count, rounds);
    tiers.push_back(measure_tiers(s, payload, count, rounds));
    const std::size_t api_count = std::max<std::size_t>(2, std::min(count, api_entries));
    apis.push_back(measure_api(s, payload, api_count, rounds));
  }

  std::printf(
      "\n### Warm hit latency, per lookup, microseconds (median / p90)\n\n"
      "| payload | entries | entry bytes | floor: open+pread+close | user tier | system tier "
      "| user/floor | system/floor | user/system |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& t : tiers) {
    std::printf("| %s | %zu | %zu | %s | %s | %s | %s | %s | %s |\n", size_name(t.payload).c_str(),
                t.count, t.entry_bytes, cell(t.floor).c_str(), cell(t.user).c_str(),
                cell(t.system).c_str(), ratio(t.user.median, t.floor.median).c_str(),
                ratio(t.system.median, t.floor.median).c_str(),
                ratio(t.user.median, t.system.median).c_str());
  }
  std::printf(
      "\n### System tier against a pread from the open package (median / p90, microseconds)\n\n"
      "| payload | pread, open fd | system tier | system + copy of the binary | system/pread "
      "| (system + copy)/pread |\n"
      "|---|---|---|---|---|---|\n");
  for (const auto& t : tiers) {
    std::printf("| %s | %s | %s | %s | %s | %s |\n", size_name(t.payload).c_str(),
                cell(t.pread).c_str(), cell(t.system).c_str(), cell(t.copied).c_str(),
                ratio(t.system.median, t.pread.median).c_str(),
                ratio(t.copied.median, t.pread.median).c_str());
  }
  std::printf(
      "\n### Parts of a hit (median / p90, microseconds)\n\n"
      "| payload | Env::read_file of one file (open+fstat+alloc+pread+close) | decode_entry + "
      "material "
      "compare, bytes in memory | key material bytes |\n"
      "|---|---|---|---|\n");
  for (const auto& t : tiers) {
    std::printf("| %s | %s | %s | %zu |\n", size_name(t.payload).c_str(), cell(t.read).c_str(),
                cell(t.decode).c_str(), t.material_bytes);
  }
  std::printf(
      "\n### Full hit through Cache::get_or_compile (memory tier off; adds key derivation), "
      "median / p90, microseconds\n\n"
      "| payload | entries | user hit | system hit | user/floor | system/floor | of which key "
      "derivation (Cache::prepare) |\n"
      "|---|---|---|---|---|---|---|\n");
  for (std::size_t s = 0; s < apis.size(); ++s) {
    const auto& a = apis[s];
    std::printf("| %s | %zu | %s | %s | %s | %s | %s |\n", size_name(a.payload).c_str(), a.count,
                cell(a.user).c_str(), cell(a.system).c_str(),
                ratio(a.user.median, tiers[s].floor.median).c_str(),
                ratio(a.system.median, tiers[s].floor.median).c_str(), cell(a.key).c_str());
  }
  // What counting a hit costs (upkeep/stats_counters.h): the adds a hit makes
  // (its tier, the bytes served, the compile time saved, read from the
  // entry's metadata) into this process's counters and a shared stats
  // file, against the full system hit measured above.
  {
    TempDir dir("kcache-bench-stats-");
    StatsCounters counters;
    auto file = StatsFile::open(Env::posix(), dir.path() + "/kcache.stats", true);
    if (!file) fail("stats file: " + file.status().message());
    counters.share(std::move(*file));
    const Fields metadata = {{kFormatField, "test"}, {std::string(kCompileMicrosField), "123456"}};
    constexpr int kHits = 2'000'000;
    const auto start = Clock::now();
    for (int i = 0; i < kHits; ++i) {
      counters.add(Stat::kSystemHits);
      counters.add(Stat::kBytesServed, 65536);
      if (auto micros = compile_micros_of(metadata))
        counters.add(Stat::kCompileMicrosSaved, *micros);
    }
    const double per_hit = micros_since(start, Clock::now()) / kHits;
    if (counters.local(Stat::kSystemHits) != kHits) fail("counting lost hits");
    std::printf(
        "\nCounting one hit (stats, shared file): %.3f µs, %.1f%% of the full system hit "
        "at %s (%.2f µs)\n",
        per_hit, 100 * per_hit / apis.front().system.median,
        size_name(apis.front().payload).c_str(), apis.front().system.median);
  }
  for (const auto& t : tiers) {
    if (t.payload == (64u << 10)) {
      const double user_ratio = t.user.median / t.floor.median;
      const double system_ratio = t.system.median / t.floor.median;
      const double pread_ratio = t.system.median / t.pread.median;
      const double user_system = t.user.median / t.system.median;
      std::printf(
          "\nTargets at 64 KiB (median): user/floor %.2fx <= 2.0x: %s; "
          "system/floor %.2fx <= 1.5x: %s; system/pread (open fd) %.2fx <= 1.25x: %s; "
          "user/system %.2fx <= 1.1x: %s\n",
          user_ratio, user_ratio <= 2.0 ? "PASS" : "FAIL", system_ratio,
          system_ratio <= 1.5 ? "PASS" : "FAIL", pread_ratio, pread_ratio <= 1.25 ? "PASS" : "FAIL",
          user_system, user_system <= 1.1 ? "PASS" : "FAIL");
    }
  }
  return 0;
}

}  // namespace
}  // namespace kcache::bench

int main(int argc, char** argv) { return kcache::bench::run(argc, argv); }
