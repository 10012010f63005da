#include "core/lock_wait.h"

#include <algorithm>
#include <thread>

namespace kcache {

namespace {

// A wait for another process's compile, counted when it ends.
class WaitCount {
 public:
  explicit WaitCount(StatsCounters& stats) : stats_(stats) {}
  ~WaitCount() {
    if (!waited_) return;
    stats_.add(Stat::kLockWaits);
    stats_.add(Stat::kLockWaitMicros,
               static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - started_)
                                              .count()));
  }
  WaitCount(const WaitCount&) = delete;
  WaitCount& operator=(const WaitCount&) = delete;
  void waited() { waited_ = true; }
  [[nodiscard]] std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  StatsCounters& stats_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool waited_ = false;
};

}  // namespace

std::optional<CachedKernel> wait_for_other_processes(
    const LockWait& wait, const std::string& db, const CacheKey& key,
    const std::function<std::optional<CachedKernel>()>& look, std::unique_ptr<FileLock>& lock) {
  WaitCount count(wait.stats);
  const auto deadline = count.started() + wait.timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    auto attempt = wait.home.try_lock(db, key);
    if (!attempt) {
      wait.log.warn_once("Lock:" + wait.folder, "Lock",
                         "Cannot lock kernels in " + wait.folder + ": " +
                             attempt.status().message() +
                             "; processes may compile the same kernel at once");
      return std::nullopt;
    }
    if (*attempt) {
      lock = std::move(*attempt);
      // The previous holder may have stored it just before unlocking.
      return look();
    }
    count.waited();
    if (auto stored = look()) return stored;
    if (std::chrono::steady_clock::now() >= deadline) {
      wait.stats.add(Stat::kLockTimeouts);
      wait.log.warn_once("Lock:timeout", "Lock",
                         "Waited " + std::to_string(wait.timeout.count() / 1000.0) +
                             " s for another process compiling kernel " + key.hex().substr(0, 16) +
                             "; compiling it here (KCACHE_LOCK_TIMEOUT)");
      return std::nullopt;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace kcache
