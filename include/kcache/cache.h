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
#pragma once

#include <kcache/admin.h>
#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/kernel.h>
#include <kcache/key.h>
#include <kcache/options.h>
#include <kcache/package.h>
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
  // Keep the binary (read from disk or compiled) in the memory tier. A
  // caller that keeps what it makes of the binary (the CUDA loader keeps
  // the loaded module) need not hold the bytes twice; a later request for
  // it then reads the user tier.
  bool keep_in_memory = true;
};

// A request with its target resolved and its key derived, made by
// Cache::prepare: the first half of get_or_compile, for a caller that looks
// in a store of its own (the CUDA loader's modules) before the tiers. It
// refers to the request it was made from (the source is not copied), which
// must outlive it and must not change meanwhile: the key was derived from
// it. It belongs to the cache and compiler it was prepared with.
class KCACHE_EXPORT PreparedRequest {
 public:
  [[nodiscard]] const CacheKey& key() const { return key_; }
  // The request's target as the compiler resolved it.
  [[nodiscard]] const Target& target() const { return target_; }

 private:
  friend class Cache;
  PreparedRequest(const void* cache, const Compiler& compiler, const KernelRequest& request,
                  Target target, KeyText text)
      : cache_(cache),
        compiler_(&compiler),
        request_(&request),
        target_(std::move(target)),
        text_(std::move(text)),
        key_(text_.key()) {}

  const void* cache_;
  const Compiler* compiler_;
  const KernelRequest* request_;
  Target target_;
  KeyText text_;
  CacheKey key_;
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
  // target). `compiler` must outlive the call.
  Result<CachedKernel> get_or_compile(const KernelRequest& request, Compiler& compiler);
  // The same for `target` in place of `request.target`: a caller that learns
  // the device at run time (the CUDA loader) need not copy its request.
  Result<CachedKernel> get_or_compile(const KernelRequest& request, const Target& target,
                                      Compiler& compiler);

  // The first half of get_or_compile: resolves `target` (request.target is
  // not read) and derives the key. Errors: kInvalidArgument as
  // get_or_compile, and kIoError when a header on disk cannot be read
  // (get_or_compile(request) compiles such a request without the cache).
  Result<PreparedRequest> prepare(const KernelRequest& request, const Target& target,
                                  const Compiler& compiler) const;
  // A temporary request would be gone before its prepared form is used.
  Result<PreparedRequest> prepare(KernelRequest&& request, const Target& target,
                                  const Compiler& compiler) const = delete;
  // The second half: the binary for a prepared request. kInvalidArgument
  // when `request` was prepared by another cache or for another compiler.
  Result<CachedKernel> get_or_compile(const PreparedRequest& request, Compiler& compiler,
                                      const GetOptions& options = {});
  // Says that the driver refused `kernel`'s binary (cuModuleLoadData, an
  // OpenCL build from the binary failed): the entry is removed from the
  // memory and user tiers, a system-tier entry of that key is passed over
  // for the rest of the process, it is counted (CacheStats::rejected) and
  // reported once, and the next request compiles it. `why`: the driver's
  // error, for the message.
  void reject(const CachedKernel& kernel, std::string_view why);
  // Replaces the binary of `kernel`'s entry in the user tier (and the
  // memory tier) with `binary`: what the driver made of that binary for the
  // same request and serves it better (PoCL's binary of a program after its
  // launches carries the work-group code they compiled). The entry keeps
  // its key material and metadata, and field "refined" says `why`.
  // Returns the kernel as now stored. kNotFound when the user tier, as
  // this process sees it, no longer holds `kernel`'s binary under its key
  // (refined or removed since: that entry is left as it is; two processes
  // that refine at once leave the last one's), kNotSupported when
  // the cache is off or has no user tier; a failed write is the tier's
  // error. Any failure leaves the entry that was there.
  Result<CachedKernel> refine(const CachedKernel& kernel, std::span<const std::uint8_t> binary,
                              std::string_view why);
  // The key and key material `request` would be looked up under, without a
  // lookup or a compile. For `kcache explain` and tests.
  Result<std::pair<CacheKey, KeyMaterial>> key_for(const KernelRequest& request,
                                                   const Compiler& compiler) const;

  // This process's counts (this cache object's).
  [[nodiscard]] CacheStats stats() const;
  // Every process's counts, for this cache folder, and what it holds.
  [[nodiscard]] Result<FolderStats> folder_stats() const;
  // Sets every process's counts for this folder to zero.
  Status zero_stats();
  // Ok when compiled kernels can be kept in the user cache: makes its
  // folder when missing, else says why not (the cache is disabled, no
  // user cache, a folder another user could write, not a writable folder).
  // A request never needs it (a cache problem never fails one); for a tool
  // about to compile many kernels to keep (kcache pack).
  Status check_storable();
  [[nodiscard]] const ResolvedConfig& config() const;

  // Administration of the user tier (the `kcache` subcommands). Each fails
  // with kUnavailable when the cache is disabled.

  // Every entry of every database of this version.
  [[nodiscard]] Result<std::vector<EntryInfo>> list() const;
  // The entry of `key` in database `db` of the user tier, whole; nullopt
  // when it has none. Reading it counts as a use (for eviction).
  [[nodiscard]] Result<std::optional<StoredEntry>> read_entry(std::string_view db,
                                                              const CacheKey& key) const;
  // Every entry of database `db`, without their binaries unless asked;
  // reading them is no use (for eviction).
  [[nodiscard]] Result<std::vector<StoredEntry>> read_entries(std::string_view db,
                                                              bool with_binaries = false) const;
  // Removes every entry of this version; returns how many were removed.
  Result<std::uint64_t> clear();
  // Forgets every remembered compile error (they are retried); returns how
  // many there were.
  Result<std::uint64_t> clear_failures();
  // Checks every user entry and every .kdb in the system folder. With
  // `repair`, bad entries are moved to quarantine and missing index rows
  // restored.
  Result<VerifyReport> verify(bool repair);
  // Brings the user tier within its limits now (what a background pass
  // does after a put takes the cache past one): evicts the entries used
  // longest ago and compacts what they leave.
  Result<PruneReport> prune(const PruneOptions& options = {});
  // Removes what no one will use again (GcOptions), or with dry_run only
  // says what that is.
  Result<GcReport> gc(const GcOptions& options = {});
  // Writes the entries of database `db` to a new .kdb file at `output_path`
  // (replaced atomically); returns the number of entries written.
  Result<std::uint64_t> export_db(std::string_view db, const std::string& output_path,
                                  const ExportOptions& options = {}) const;
  // Copies every entry of the package at `path` into the user tier, in the
  // database its metadata names; returns how many (one the user tier holds
  // already is not stored again, nor counted). An entry that fails
  // its checks is skipped, counted in `left_out` when given (kCorruption
  // when none is left). A package whose signature does not hold, or, with
  // trusted keys configured, one they do not sign, is refused whole
  // (kCorruption), as the system tier refuses it.
  Result<std::uint64_t> import_package(const std::string& path, std::uint64_t* left_out = nullptr);

  class Impl;

 private:
  explicit Cache(std::unique_ptr<Impl> impl);
  // Opens a cache over another Env (fault injection in tests).
  friend Result<std::unique_ptr<Cache>> open_cache_with_env(const CacheOptions& options, Env& env);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kcache
