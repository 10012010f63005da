// kcache: client-keyed entries, and the claim on a key being computed
// (Cache::get, put and claim in cache.h).
#pragma once

#include <kcache/export.h>
#include <kcache/kernel.h>
#include <kcache/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kcache {

class Cache;

// Client-keyed entries: bytes a program compiled with its own compiler
// (Triton, Inductor, CuPy, JAX) kept under its own key, in a namespace of
// its own. They live in the same tiers as kernels, with the same checks
// (a checksum, and the whole key compared on every read), limits, trust
// rules and packages; each namespace is a database of its own,
// "client.<namespace>" (a package of it is client.<namespace>.kdb).
//
// A namespace is 1 to 64 letters, digits, '_', '-' and '.', not starting
// with '.'; a key is 1 to 4096 bytes of anything.

// Fields kept with a client entry, e.g. {"triton.version", "3.6.0"}.
using EntryMetadata = std::vector<std::pair<std::string, std::string>>;

// A caller's claim on a client key it is about to compute (Cache::claim):
// other threads and processes that claim the same key wait for it
// (bounded by KCACHE_LOCK_TIMEOUT) instead of computing it too. Move-only;
// destroying a held claim abandons it.
class KCACHE_EXPORT ClientClaim {
 public:
  ClientClaim(ClientClaim&&) noexcept;
  ClientClaim& operator=(ClientClaim&&) noexcept;
  ~ClientClaim();

  // The entry, when one was there or another claimant stored it while
  // this one waited: nothing to compute.
  [[nodiscard]] const std::optional<CachedKernel>& found() const;
  // Whether this caller holds the key: it computes, then calls finish or
  // abandon. False when found(), and when the wait for another holder ran
  // out (the caller computes and may put() all the same).
  [[nodiscard]] bool held() const;
  // Stores the computed bytes (as Cache::put), hands them to those
  // waiting, and releases the key. kInvalidArgument unless held().
  Status finish(std::span<const std::uint8_t> bytes, const EntryMetadata& metadata = {});
  // Releases the key without storing: one waiter claims it next.
  void abandon();

  struct State;

 private:
  friend class Cache;
  explicit ClientClaim(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kcache
