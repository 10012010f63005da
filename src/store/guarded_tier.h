// A tier as the cache holds it: counters of what it answered, and
// breakers that stop calling a tier that keeps failing (a dead disk, a
// full one, and later an unreachable server), as LevelDB wraps an Env.
//
// Reads (get) and writes (put, remove, try_lock) have a breaker each, so
// that a cache folder that can no longer be written still serves hits.
// After `failures_to_trip` failures in a row a breaker opens: calls
// answer at once with the failure that opened it (so that the cache's one
// warning per cause stays one), without reaching the tier, for a pause that
// starts at `first_pause` and doubles, up to `longest_pause`, each time a
// probe fails. When the pause is over one call goes through as the probe
// (others meanwhile are still skipped); its success closes the breaker.
// A miss is not a failure; nor is kNotSupported (an ability the tier does
// not have). Listing, export, clear, prune and verify go straight through.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/mutex.h"
#include "store/tier.h"

namespace kcache {

struct BreakerPolicy {
  int failures_to_trip = 5;
  std::chrono::milliseconds first_pause{1000};
  std::chrono::milliseconds longest_pause{30000};
};

struct TierCounters {
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> failures{0};  // calls that reached the tier and failed
  std::atomic<std::uint64_t> skipped{0};   // calls an open breaker answered
  std::atomic<std::uint64_t> trips{0};     // times a breaker opened
};

class GuardedTier final : public Tier {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit GuardedTier(std::unique_ptr<Tier> inner, BreakerPolicy policy = {},
                       Clock clock = std::chrono::steady_clock::now);

  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override;
  Status put(const std::string& db, const Entry& entry,
             std::span<const std::uint8_t> encoded) override;
  Status remove(const std::string& db, const CacheKey& key) override;
  Result<std::unique_ptr<FileLock>> try_lock(const std::string& db, const CacheKey& key) override;

  [[nodiscard]] Result<std::vector<std::string>> databases() const override {
    return inner_->databases();
  }
  [[nodiscard]] Result<std::vector<EntryInfo>> list(const std::string& db) const override {
    return inner_->list(db);
  }
  [[nodiscard]] Result<std::vector<Entry>> read_all(const std::string& db) const override {
    return inner_->read_all(db);
  }
  Result<std::uint64_t> clear() override { return inner_->clear(); }
  Result<PruneReport> prune(const PruneOptions& options) override { return inner_->prune(options); }
  [[nodiscard]] Result<Usage> usage() const override { return inner_->usage(); }
  void note_use(const DbNames& db, const CacheKey& key) override { inner_->note_use(db, key); }
  Status ready_to_store() override { return inner_->ready_to_store(); }
  Status verify(bool repair, VerifyReport& report) override {
    return inner_->verify(repair, report);
  }

  [[nodiscard]] const TierCounters& counters() const { return counters_; }
  // Called each time a breaker opens (the cache counts it); set before the
  // tier is used.
  void on_trip(std::function<void()> call) { on_trip_ = std::move(call); }

 private:
  class Breaker {
   public:
    // Whether a call may go to the tier now (else `skipped` is what it
    // answers); `probe` is set when it is the one call let through an open
    // breaker.
    bool admit(const Clock& clock, bool& probe, Status& skipped);
    // What the admitted call gave: ok, or the failure; true when this
    // failure opened the breaker.
    bool record(const Status& failure, bool probe, const Clock& clock, const BreakerPolicy& policy);

   private:
    // Set from a failure until the next answer: only then are the lock and
    // the clock needed.
    std::atomic<bool> troubled_{false};
    Mutex mutex_;
    int failures_in_a_row_ GUARDED_BY(mutex_) = 0;
    bool open_ GUARDED_BY(mutex_) = false;
    bool probing_ GUARDED_BY(mutex_) = false;
    std::chrono::steady_clock::time_point closed_until_ GUARDED_BY(mutex_){};
    std::chrono::milliseconds pause_ GUARDED_BY(mutex_){0};
    Status last_failure_ GUARDED_BY(mutex_);
  };

  // Runs `call` through `breaker`, or answers without calling it when the
  // breaker is open.
  template <typename Call>
  auto guarded(Breaker& breaker, Call&& call) -> decltype(call());

  std::unique_ptr<Tier> inner_;
  const BreakerPolicy policy_;
  const Clock clock_;
  Breaker reads_;
  Breaker writes_;
  TierCounters counters_;
  std::function<void()> on_trip_;
};

}  // namespace kcache
