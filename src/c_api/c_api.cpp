// The C API: a thin shell over the C++ API that never lets an exception or
// a C++ type cross into the caller.
#include <kcache/admin.h>
#include <kcache/c_api.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

struct kcache_cache {
  std::unique_ptr<kcache::Cache> cache;
};
struct kcache_compiler {
  std::unique_ptr<kcache::Compiler> compiler;
};
struct kcache_kernel {
  kcache::CachedKernel kernel;
  std::string key_hex;
};

namespace {

char* duplicate(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

int fail(const kcache::Status& status, char** error) {
  if (error != nullptr) {
    std::string text = status.message();
    if (!status.details().empty()) text += "\n" + status.details();
    *error = duplicate(text);
  }
  return static_cast<int>(status.code());
}

int succeed(char** error) {
  if (error != nullptr) *error = nullptr;
  return 0;
}

// Runs `body`, turning anything it throws (std::bad_alloc) into a status.
template <class Body>
int guarded(char** error, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(kcache::Status::internal("out of memory"), error);
  } catch (...) {
    return fail(kcache::Status::internal("unexpected exception"), error);
  }
}

}  // namespace

extern "C" {

int kcache_open(const kcache_options* options, kcache_cache** out, char** error) {
  return guarded(error, [&] {
    if (out == nullptr) return fail(kcache::Status::invalid_argument("out is NULL"), error);
    kcache::CacheOptions cpp;
    if (options != nullptr) {
      if (options->cache_dir != nullptr) cpp.cache_dir = options->cache_dir;
      if (options->system_db_path != nullptr) cpp.system_db_path = options->system_db_path;
      if (options->disable_cache != 0) cpp.disable_cache = true;
    }
    auto cache = kcache::Cache::open(cpp);
    if (!cache) return fail(cache.status(), error);
    *out = new kcache_cache{std::move(*cache)};
    return succeed(error);
  });
}

void kcache_close(kcache_cache* cache) { delete cache; }

int kcache_compiler_create(const char* backend, const char* command, const char* compiler_id,
                           kcache_compiler** out, char** error) {
  return guarded(error, [&] {
    if (backend == nullptr || out == nullptr) {
      return fail(kcache::Status::invalid_argument("backend and out are required"), error);
    }
    kcache::CompilerConfig config;
    config.backend = backend;
    if (command != nullptr) config.command = command;
    if (compiler_id != nullptr) config.compiler_id = compiler_id;
    auto compiler = kcache::make_compiler(config);
    if (!compiler) return fail(compiler.status(), error);
    *out = new kcache_compiler{std::move(*compiler)};
    return succeed(error);
  });
}

void kcache_compiler_free(kcache_compiler* compiler) { delete compiler; }

int kcache_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                          const kcache_request* request, kcache_kernel** out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || compiler == nullptr || request == nullptr || out == nullptr ||
        request->source == nullptr) {
      return fail(kcache::Status::invalid_argument(
                      "cache, compiler, request, request->source and out are required"),
                  error);
    }
    kcache::KernelRequest cpp;
    cpp.source = request->source;
    if (request->kernel_name != nullptr) cpp.kernel_names.emplace_back(request->kernel_name);
    if (request->options != nullptr) cpp.options = request->options;
    if (request->target != nullptr && request->target[0] != '\0') {
      auto target = kcache::Target::parse(request->target);
      if (!target) return fail(target.status(), error);
      cpp.target = *target;
    }
    auto kernel = cache->cache->get_or_compile(cpp, *compiler->compiler);
    if (!kernel) return fail(kernel.status(), error);
    std::string hex = kernel->key.hex();
    *out = new kcache_kernel{std::move(*kernel), std::move(hex)};
    return succeed(error);
  });
}

const uint8_t* kcache_kernel_data(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.binary().data() : nullptr;
}

size_t kcache_kernel_size(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.binary().size() : 0;
}

const char* kcache_kernel_tier(const kcache_kernel* kernel) {
  return kernel != nullptr ? kcache::tier_name(kernel->kernel.tier).data() : "";
}

const char* kcache_kernel_key(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->key_hex.c_str() : "";
}

void kcache_kernel_free(kcache_kernel* kernel) { delete kernel; }

int kcache_get_stats(kcache_cache* cache, int all_processes, kcache_stats* out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || out == nullptr || out->size < sizeof(size_t)) {
      return fail(kcache::Status::invalid_argument("cache and out (with its size) are required"),
                  error);
    }
    kcache_stats full{};
    full.size = sizeof full;
    kcache::CacheStats c = cache->cache->stats();
    if (all_processes != 0) {
      auto folder = kcache::CacheAdmin(*cache->cache).folder_stats();
      if (!folder) return fail(folder.status(), error);
      c = folder->counts;
      full.entries = folder->entries;
      full.bytes = folder->bytes;
      full.since_unix = static_cast<std::uint64_t>(folder->since_unix);
    }
    full.requests = c.requests;
    full.memory_hits = c.memory_hits;
    full.system_hits = c.system_hits;
    full.user_hits = c.user_hits;
    full.compiles = c.compiles;
    full.compile_failures = c.compile_failures;
    full.failure_hits = c.failure_hits;
    full.compile_micros = c.compile_micros;
    full.compile_micros_saved = c.compile_micros_saved;
    full.bytes_served = c.bytes_served;
    full.bytes_stored = c.bytes_stored;
    full.evicted = c.evicted;
    full.expired = c.expired;
    full.corrupt_entries = c.corrupt_entries;
    full.store_failures = c.store_failures;
    full.lock_waits = c.lock_waits;
    full.lock_wait_micros = c.lock_wait_micros;
    full.lock_timeouts = c.lock_timeouts;
    full.breaker_trips = c.breaker_trips;
    full.rejected = c.rejected;
    full.uncacheable = c.uncacheable;
    // A caller built against an older, shorter struct gets what it has room for.
    const std::size_t size = std::min(out->size, sizeof full);
    std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
                reinterpret_cast<const char*>(&full) + sizeof(size_t), size - sizeof(size_t));
    return succeed(error);
  });
}

int kcache_zero_stats(kcache_cache* cache, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr) return fail(kcache::Status::invalid_argument("cache is NULL"), error);
    if (kcache::Status s = kcache::CacheAdmin(*cache->cache).zero_stats(); !s.is_ok())
      return fail(s, error);
    return succeed(error);
  });
}

void kcache_string_free(char* text) { std::free(text); }

const char* kcache_version(void) { return KCACHE_VERSION_STRING; }

}  // extern "C"
