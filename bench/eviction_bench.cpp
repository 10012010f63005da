// Lookup latency in a large user tier, idle and while another process
// evicts and compacts it (docs/benchmarks.md, issue 12).
//
// A user tier is filled with N entries (spread over D databases) whose
// last use lies two days back. This process then uses H of them (the hot
// set) and times user-tier hits on random hot keys (UserTier::get, and
// the material check Cache does): first with nothing else running (idle),
// then while a child process runs eviction passes back to back, each
// evicting the coldest entries down to 90% of a shrinking entry limit and
// compacting every database that lost some (busy). The hot set, used now,
// is never evicted; the child's rewrites are what the lookups share the
// machine and the page cache with.
//
// Usage: eviction_bench [--entries=N] [--size=BYTES] [--dbs=D] [--hot=H]
//                       [--lookups=L] [--smoke]
//   defaults 100000 entries of 2048 bytes in 8 databases, 5000 hot, 200000
//   lookups a phase; --smoke is 2000 entries, 200 hot, 2000 lookups.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "base/hash.h"
#include "bench_support.h"
#include "format/entry.h"
#include "store/user/user_tier.h"

namespace kcache::bench {
namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "eviction_bench: %s\n", what.c_str());
  std::exit(1);
}

class NoEvents final : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string& where, const Status& problem) override {
    fail("corrupt entry " + where + ": " + problem.message());
  }
};

// The real clock, `back` seconds ago: the entries are filled as if made
// (and last used) then.
class PastEnv final : public EnvWrapper {
 public:
  explicit PastEnv(std::int64_t back) : EnvWrapper(Env::posix()), back_(back) {}
  std::int64_t now_unix() const override { return EnvWrapper::now_unix() - back_; }

 private:
  std::int64_t back_;
};

struct Item {
  std::string db;
  CacheKey key;
  std::string material;
};

// What the child reports, in shared memory.
struct ChildProgress {
  std::atomic<bool> stop{false};
  std::atomic<bool> started{false};
  std::atomic<bool> done{false};  // ran out of entries to evict
  std::atomic<int> passes{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> compacted{0};
};

struct Phase {
  double median = 0, p99 = 0;
  std::size_t count = 0;
};

Phase time_lookups(Tier& tier, const std::vector<Item>& hot, std::size_t lookups, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<double> samples;
  samples.reserve(lookups);
  std::uint64_t sink = 0;
  for (std::size_t i = 0; i < lookups; ++i) {
    const Item& item = hot[random() % hot.size()];
    const auto start = Clock::now();
    auto got = tier.get({item.db, item.db}, item.key);
    const bool hit = got && got->has_value() && (**got).material == item.material;
    const auto end = Clock::now();
    if (!hit) fail("a hot entry missed: " + item.key.hex());
    sink += (**got).payload().back();
    samples.push_back(micros_since(start, end));
  }
  if (sink == 1) std::printf(" ");
  std::sort(samples.begin(), samples.end());
  Phase phase;
  phase.count = samples.size();
  phase.median = samples[samples.size() / 2];
  phase.p99 = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)];
  return phase;
}

int run(const Args& args) {
  const bool smoke = args.flag("smoke");
  const auto entries = static_cast<std::size_t>(args.number("entries", smoke ? 2000 : 100000));
  const auto size = static_cast<std::size_t>(args.number("size", 2048));
  const auto dbs = static_cast<std::size_t>(args.number("dbs", 8));
  const auto hot_count = static_cast<std::size_t>(args.number("hot", smoke ? 200 : 5000));
  const auto lookups = static_cast<std::size_t>(args.number("lookups", smoke ? 2000 : 200000));
  if (entries == 0 || dbs == 0 || hot_count == 0 || hot_count > entries / 2) {
    fail("need entries > 0, dbs > 0 and 0 < hot <= entries / 2");
  }

  TempDir dir("kcache-bench-evict-");
  const std::string user_dir = dir.path() + "/user";
  const Logger log(LogLevel::kWarning, nullptr);
  NoEvents events;
  std::vector<Item> items(entries);
  const auto fill_start = Clock::now();
  {
    PastEnv two_days_ago(2 * 86400);
    auto filler = make_user_tier({user_dir, /*sync=*/false}, two_days_ago, log, events);
    std::mt19937 random(1);
    std::vector<std::uint8_t> payload(size);
    for (std::size_t i = 0; i < entries; ++i) {
      for (auto& byte : payload) byte = static_cast<std::uint8_t>(random());
      Entry entry;
      entry.material = "backend bench\nkernel k" + std::to_string(i) + "\n";
      entry.key = CacheKey(xxh3_128(entry.material));
      entry.created_unix = two_days_ago.now_unix();
      entry.storage = ByteBuffer::copy_of(payload);
      entry.payload_size = size;
      Item& item = items[i];
      item.db = "target" + std::to_string(i % dbs);
      item.key = entry.key;
      item.material = entry.material;
      auto encoded = encode_entry(entry, Compression::kNone);
      if (!encoded) fail("encode: " + encoded.status().message());
      if (Status s = filler->put(item.db, entry, *encoded); !s.is_ok()) fail("put: " + s.message());
    }
  }
  const double fill_s = micros_since(fill_start, Clock::now()) / 1e6;

  // The hot set: spread over the databases, used now (the real clock).
  auto reader = make_user_tier({user_dir, false}, Env::posix(), log, events);
  std::vector<Item> hot;
  for (std::size_t i = 0; i < hot_count; ++i) hot.push_back(items[i * (entries / hot_count)]);
  (void)time_lookups(*reader, hot, hot.size() * 2, 7);  // opens the logs, records the uses
  const Phase idle = time_lookups(*reader, hot, lookups, 11);

  void* shared = ::mmap(nullptr, sizeof(ChildProgress), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) fail("mmap");
  auto* progress = new (shared) ChildProgress();
  const pid_t child = ::fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    // Passes back to back, each evicting the coldest 10% or so (down to
    // 90% of a limit just under what is left) and compacting.
    auto evictor = make_user_tier({user_dir, /*sync=*/true}, Env::posix(), log, events);
    std::uint64_t left = entries;
    progress->started = true;
    while (!progress->stop && left > hot_count * 2) {
      PruneOptions limit;
      limit.max_entries = left - 1;
      auto report = evictor->prune(limit);
      if (!report) fail("prune: " + report.status().message());
      left = report->entries_after;
      progress->evicted += report->evicted;
      progress->compacted += report->databases_compacted;
      ++progress->passes;
    }
    progress->done = !progress->stop;
    ::_exit(0);
  }
  // The busy phase starts with the child's first pass under way.
  while (!progress->started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int passes_before = progress->passes;
  const Phase busy = time_lookups(*reader, hot, lookups, 13);
  const int passes_during = progress->passes - passes_before;
  const bool busy_throughout = !progress->done;
  progress->stop = true;
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the evicting process failed");

  std::printf("## Lookups in a user tier of %zu entries (%zu B each, %zu databases), %zu hot\n\n",
              entries, size, dbs, hot_count);
  std::printf(
      "Filled in %.1f s. While busy, another process ran %d eviction passes%s "
      "(%d in all: %llu entries evicted, %llu database compactions).\n\n",
      fill_s, passes_during,
      busy_throughout ? ", still evicting when the lookups ended"
                      : ", but ran out of entries before the lookups ended",
      progress->passes.load(), static_cast<unsigned long long>(progress->evicted.load()),
      static_cast<unsigned long long>(progress->compacted.load()));
  std::printf(
      "| phase | lookups | median µs | p99 µs | median / idle | p99 / idle |\n"
      "|---|---|---|---|---|---|\n");
  std::printf("| idle | %zu | %.2f | %.2f | 1.00 | 1.00 |\n", idle.count, idle.median, idle.p99);
  std::printf("| eviction in another process | %zu | %.2f | %.2f | %.2f | %.2f |\n", busy.count,
              busy.median, busy.p99, busy.median / idle.median, busy.p99 / idle.p99);
  ::munmap(shared, sizeof(ChildProgress));
  return 0;
}

}  // namespace
}  // namespace kcache::bench

int main(int argc, char** argv) {
  kcache::bench::Args args(argc, argv);
  if (auto bad = args.unknown({"--entries", "--size", "--dbs", "--hot", "--lookups", "--smoke"})) {
    std::fprintf(stderr,
                 "eviction_bench: unknown argument %s\nusage: eviction_bench [--entries=N] "
                 "[--size=BYTES] [--dbs=D] [--hot=H] [--lookups=L] [--smoke]\n",
                 bad->c_str());
    return 2;
  }
  return kcache::bench::run(args);
}
