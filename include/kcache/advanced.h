// kcache: the expert surface of a Cache, for a caller that keeps a store
// of its own in front of the tiers (the CUDA loader's modules) or hands
// the binary to a driver that may refuse or improve it (the OpenCL layer).
// Everyday use needs none of it (cache.h); administration is admin.h.
//
//   AdvancedCache expert(*cache);
//   auto prepared = expert.prepare(request, device_target, compiler);
//   if (prepared && prepared->keyed()) { /* look in the caller's store */ }
//   auto kernel = expert.get_or_compile(*prepared, compiler);
//   if (driver refuses kernel) expert.reject(*kernel, "cuModuleLoadData: ...");
//
// Thread safety: as Cache's. An AdvancedCache is a view: it must not
// outlive its Cache, and any number of them may be made.
#pragma once

#include <kcache/cache.h>
#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/kernel.h>
#include <kcache/key.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

namespace kcache {

// A request with its target resolved and, where kcache can, its key
// derived: the first half of get_or_compile. It refers to the request it
// was made from (the source is not copied), which must outlive it and must
// not change meanwhile: the key was derived from it. It belongs to the
// cache and compiler it was prepared with. Move-only.
class KCACHE_EXPORT PreparedRequest {
 public:
  PreparedRequest(PreparedRequest&&) noexcept;
  PreparedRequest& operator=(PreparedRequest&&) noexcept;
  ~PreparedRequest();

  // False when kcache cannot key the request: kcache cannot know every
  // file its compile reads (an option naming files it does not model), or
  // a header on disk cannot be read. get_or_compile then compiles it
  // without the cache, as Cache::get_or_compile does; key() is empty.
  [[nodiscard]] bool keyed() const;
  // The key the tiers are searched under; all zero when !keyed().
  [[nodiscard]] const CacheKey& key() const;
  // The request's target as the compiler resolved it.
  [[nodiscard]] const Target& target() const;

  struct State;

 private:
  friend class AdvancedCache;
  explicit PreparedRequest(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class KCACHE_EXPORT AdvancedCache {
 public:
  explicit AdvancedCache(Cache& cache);

  // Resolves `target` (request.target is not read) and derives the key.
  // Errors: kInvalidArgument for a request that cannot be keyed at all (a
  // target the compiler does not take or that cannot name a database), as
  // Cache::get_or_compile. A request kcache cannot key is no error: it is
  // prepared unkeyed (PreparedRequest::keyed).
  [[nodiscard]] Result<PreparedRequest> prepare(const KernelRequest& request, const Target& target,
                                                const Compiler& compiler) const;
  // A temporary request would be gone before its prepared form is used.
  Result<PreparedRequest> prepare(KernelRequest&& request, const Target& target,
                                  const Compiler& compiler) const = delete;
  // The second half: the binary for a prepared request (options.target is
  // not read: the request's target was resolved by prepare).
  // kInvalidArgument when `request` was prepared by another cache or for
  // another compiler; otherwise as Cache::get_or_compile.
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
  [[nodiscard]] Result<std::pair<CacheKey, KeyMaterial>> key_for(const KernelRequest& request,
                                                                 const Compiler& compiler) const;

 private:
  Cache::Impl& impl_;
};

}  // namespace kcache
