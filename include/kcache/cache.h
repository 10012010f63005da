// kcache: the cache.
//
// A `Cache` returns a compiled binary for a request, from the first tier
// that has it:
//
//   memory (this process) -> system (read-only .kdb packages)
//     -> user (read-write, <cache dir>/<version>/<db>.ukdb) -> compile
//
// A compiled binary is written to the user tier and kept in memory. A hit
// in a lower tier is kept in memory too (its bytes are shared, not copied),
// unless the caller asks otherwise (GetOptions). Every entry read from disk is
// checked (checksum, then the full key material) before it is returned; a
// bad entry is counted, moved to quarantine and treated as a miss.
//
// A cache problem never fails a request: an unwritable directory, a full
// disk or a corrupt file is logged once and the kernel is compiled. The only
// failures `get_or_compile` returns are the compiler's (and bad input). A
// compile error is remembered in the user tier for KCACHE_FAILURE_TTL
// (default 1 h) and returned again, with its log, without recompiling.
//
// Thread safety: all methods may be called from any number of threads at
// once. When several threads miss the same key, one compiles and the others
// wait for its result.
//
// This header is the everyday surface. The administration of a cache
// (list, verify, prune, gc, export, import, ...) is CacheAdmin in admin.h;
// the expert surface (prepare, reject, refine) is AdvancedCache in
// advanced.h.
#pragma once

#include <kcache/client.h>
#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/kernel.h>
#include <kcache/key.h>
#include <kcache/options.h>
#include <kcache/stats.h>
#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

class Env;

// How get_or_compile treats one request.
struct KCACHE_EXPORT GetOptions {
  // The target to compile for, in place of request.target: a caller that
  // learns the device at run time (the CUDA loader) need not copy its
  // request.
  std::optional<Target> target{};
  // Keep the binary (read from disk or compiled) in the memory tier. A
  // caller that keeps what it makes of the binary (the CUDA loader keeps
  // the loaded module) need not hold the bytes twice; a later request for
  // it then reads the user tier.
  bool keep_in_memory = true;
};

class KCACHE_EXPORT Cache {
 public:
  // Opens a cache with `options` resolved against the environment and the
  // build (see options.h). Touches no file: directories are created on the
  // first write. Fails only on an option that cannot be used at all.
  static Result<std::unique_ptr<Cache>> open(const CacheOptions& options = {});

  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Returns the binary for `request`, compiled by `compiler` if no tier has
  // it. Errors: the compiler's (kCompileError with its log, kUnavailable)
  // and kInvalidArgument for a request that cannot be keyed (an unknown
  // target). A request kcache cannot key (it cannot know every file the
  // compile reads) is compiled without the cache. `compiler` must outlive
  // the call.
  Result<CachedKernel> get_or_compile(const KernelRequest& request, Compiler& compiler,
                                      const GetOptions& options = {});

  // The client entry of `key` in `name_space` (kcache/client.h): its
  // bytes (binary()), metadata and tier; nullopt when no tier has it.
  // kInvalidArgument for a namespace or key out of bounds; a cache problem
  // is a miss, as for kernels.
  Result<std::optional<CachedKernel>> get(std::string_view name_space, std::string_view key);
  // Keeps `bytes` and `metadata` under `key` in `name_space`: in memory and
  // in the user tier (which it replaces there). kInvalidArgument for a
  // namespace or key out of bounds or empty bytes; a failed write is the
  // tier's error (nothing is kept on disk).
  Status put(std::string_view name_space, std::string_view key, std::span<const std::uint8_t> bytes,
             const EntryMetadata& metadata = {});
  // get, or else a claim on the key for this caller to compute and
  // finish: the single flight of kernels, for client keys.
  Result<ClientClaim> claim(std::string_view name_space, std::string_view key);

  // This process's counts (this cache object's).
  [[nodiscard]] CacheStats stats() const;
  [[nodiscard]] const ResolvedConfig& config() const;

  class Impl;

 private:
  friend class AdvancedCache;
  friend class CacheAdmin;
  explicit Cache(std::unique_ptr<Impl> impl);
  // Opens a cache over another Env (fault injection in tests).
  friend Result<std::unique_ptr<Cache>> open_cache_with_env(const CacheOptions& options, Env& env);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kcache
