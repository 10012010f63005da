// Uses an installed kcache: opens a cache in the folder given on the command
// line, with the command backend ("cp {in} {out}"), fetches one kernel twice
// (tier compiled, then user, with the memory tier off), then once more from a
// cache with the memory tier on (user, then memory). Exit 0 when all is as
// expected; otherwise prints what was expected and seen, exit 1.
#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/version.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "kcache_consumer: FAIL: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kcache_consumer CACHE_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::printf("kcache headers %s\n", KCACHE_VERSION_STRING);

  kcache::CompilerConfig compiler_config;
  compiler_config.backend = "command";
  compiler_config.command = "cp {in} {out}";
  compiler_config.compiler_id = "test-cp";
  auto compiler = kcache::make_compiler(compiler_config);
  if (!compiler) {
    std::fprintf(stderr, "kcache_consumer: make_compiler: %s\n",
                 compiler.status().message().c_str());
    return 1;
  }

  kcache::KernelRequest request;
  request.source = "kernel void consumer(global int* a) { a[0] = 42; }\n";
  request.kernel_names = {"consumer"};
  auto target = kcache::Target::parse("gfx906_60");
  if (!target) {
    std::fprintf(stderr, "kcache_consumer: Target::parse: %s\n", target.status().message().c_str());
    return 1;
  }
  request.target = *target;

  std::string first_key;
  auto fetch = [&](kcache::Cache& cache, std::string_view expected_tier, const char* what) {
    auto kernel = cache.get_or_compile(request, **compiler);
    if (!kernel) {
      expect(false, std::string(what) + ": get_or_compile failed: " + kernel.status().message());
      return;
    }
    const std::string tier(kcache::tier_name(kernel->tier));
    std::printf("%s: tier %s, %zu bytes, key %s\n", what, tier.c_str(), kernel->binary().size(),
                kernel->key.hex().c_str());
    expect(tier == expected_tier,
           std::string(what) + ": tier: expected " + std::string(expected_tier) + ", seen " + tier);
    const auto bytes = kernel->binary();
    expect(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == request.source,
           std::string(what) + ": the binary is not what 'cp' produced (the source)");
    expect(kernel->db == "gfx906_60",
           std::string(what) + ": db: expected gfx906_60, seen " + kernel->db);
    if (first_key.empty()) first_key = kernel->key.hex();
    expect(kernel->key.hex() == first_key, std::string(what) + ": the key changed");
  };

  {
    kcache::CacheOptions options;
    options.read_environment = false;
    options.cache_dir = dir + "/cache";
    options.system_db_path = dir + "/sys";
    options.memory_cache_size = 0;  // so the second fetch reads the user tier
    auto cache = kcache::Cache::open(options);
    if (!cache) {
      std::fprintf(stderr, "kcache_consumer: Cache::open: %s\n", cache.status().message().c_str());
      return 1;
    }
    expect((*cache)->config().enabled,
           "the cache is disabled: " + (*cache)->config().disabled_reason);
    fetch(**cache, "compiled", "fetch 1");
    fetch(**cache, "user", "fetch 2");
    const auto stats = (*cache)->stats();
    expect(stats.compiles == 1,
           "stats.compiles: expected 1, seen " + std::to_string(stats.compiles));
    expect(stats.user_hits == 1,
           "stats.user_hits: expected 1, seen " + std::to_string(stats.user_hits));
  }
  {
    kcache::CacheOptions options;
    options.read_environment = false;
    options.cache_dir = dir + "/cache";
    options.system_db_path = dir + "/sys";
    auto cache = kcache::Cache::open(options);
    if (!cache) {
      std::fprintf(stderr, "kcache_consumer: Cache::open: %s\n", cache.status().message().c_str());
      return 1;
    }
    fetch(**cache, "user", "fetch 3 (new cache, memory tier on)");
    fetch(**cache, "memory", "fetch 4");
  }
  if (failures == 0) std::printf("kcache_consumer: OK\n");
  return failures == 0 ? 0 : 1;
}
