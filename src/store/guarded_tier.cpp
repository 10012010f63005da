#include "store/guarded_tier.h"

#include <algorithm>

namespace kcache {

GuardedTier::GuardedTier(std::unique_ptr<Tier> inner, BreakerPolicy policy, Clock clock)
    : inner_(std::move(inner)), policy_(policy), clock_(std::move(clock)) {}

bool GuardedTier::Breaker::admit(const Clock& clock, bool& probe, Status& skipped) {
  probe = false;
  // The hot path: no failure since the last answer, no lock, no clock.
  if (!troubled_.load(std::memory_order_acquire)) return true;
  MutexLock lock(mutex_);
  if (!open_) return true;
  if (probing_ || clock() < closed_until_) {
    skipped = last_failure_;
    return false;
  }
  probing_ = true;
  probe = true;
  return true;
}

bool GuardedTier::Breaker::record(const Status& failure, bool probe, const Clock& clock,
                                  const BreakerPolicy& policy) {
  if (failure.is_ok() && !probe && !troubled_.load(std::memory_order_acquire)) return false;
  MutexLock lock(mutex_);
  if (probe) probing_ = false;
  if (failure.is_ok()) {
    failures_in_a_row_ = 0;
    open_ = false;
    pause_ = std::chrono::milliseconds(0);
    troubled_.store(false, std::memory_order_release);
    return false;
  }
  troubled_.store(true, std::memory_order_release);
  ++failures_in_a_row_;
  last_failure_ = failure;
  if (!probe && (open_ || failures_in_a_row_ < policy.failures_to_trip)) return false;
  // Tripped, or a probe failed: closed to calls for a longer pause.
  pause_ = pause_.count() == 0 ? policy.first_pause : std::min(pause_ * 2, policy.longest_pause);
  open_ = true;
  closed_until_ = clock() + pause_;
  return true;
}

namespace {
// The failure in `status`: not an answer, nor a missing ability (ok else).
Status failure_in(const Status& status) {
  return status.code() == StatusCode::kNotSupported ? Status::ok() : status;
}
template <typename T>
Status failure_in(const Result<T>& result) {
  return failure_in(result.status());
}
}  // namespace

template <typename Call>
auto GuardedTier::guarded(Breaker& breaker, Call&& call) -> decltype(call()) {
  bool probe = false;
  Status skipped;
  if (!breaker.admit(clock_, probe, skipped)) {
    counters_.skipped.fetch_add(1, std::memory_order_relaxed);
    return skipped;
  }
  auto result = call();
  const Status failure = failure_in(result);
  if (!failure.is_ok()) counters_.failures.fetch_add(1, std::memory_order_relaxed);
  if (breaker.record(failure, probe, clock_, policy_)) {
    counters_.trips.fetch_add(1, std::memory_order_relaxed);
    if (on_trip_) on_trip_();
  }
  return result;
}

Result<std::optional<Entry>> GuardedTier::get(const DbNames& db, const CacheKey& key) {
  auto got = guarded(reads_, [&] { return inner_->get(db, key); });
  if (got) {
    (got->has_value() ? counters_.hits : counters_.misses).fetch_add(1, std::memory_order_relaxed);
  }
  return got;
}

Status GuardedTier::put(const std::string& db, const Entry& entry,
                        std::span<const std::uint8_t> encoded) {
  return guarded(writes_, [&] { return inner_->put(db, entry, encoded); });
}

Status GuardedTier::remove(const std::string& db, const CacheKey& key) {
  return guarded(writes_, [&] { return inner_->remove(db, key); });
}

Result<std::unique_ptr<FileLock>> GuardedTier::try_lock(const std::string& db,
                                                        const CacheKey& key) {
  return guarded(writes_, [&] { return inner_->try_lock(db, key); });
}

}  // namespace kcache
