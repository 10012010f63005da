// In-process single flight: of all threads that miss the same key at once,
// the first (the leader) does the work and the others wait for its result.
// Keys never wait on each other; no lock is held while the leader works.
// The cross-process lease (one compile per key across processes) plugs in
// around the leader's work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace kcache {

template <class Key, class Value>
class SingleFlight {
 public:
  class Flight {
   public:
    // Blocks until the leader publishes the value.
    Value wait() {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [this] { return value_.has_value(); });
      return *value_;
    }
    // The same, giving up at `deadline` (nullopt).
    template <class Clock, class Duration>
    std::optional<Value> wait_until(std::chrono::time_point<Clock, Duration> deadline) {
      std::unique_lock lock(mutex_);
      if (!done_.wait_until(lock, deadline, [this] { return value_.has_value(); })) {
        return std::nullopt;
      }
      return *value_;
    }

   private:
    friend class SingleFlight;
    std::mutex mutex_;
    std::condition_variable done_;
    std::optional<Value> value_;
  };

  // Joins the flight for `key`. Returns the flight and whether the caller
  // leads it; a leader must call finish() exactly once.
  std::pair<std::shared_ptr<Flight>, bool> join(const Key& key) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = flights_.try_emplace(key);
    if (inserted) it->second = std::make_shared<Flight>();
    return {it->second, inserted};
  }

  // Publishes the leader's value to the waiters and ends the flight.
  void finish(const Key& key, const std::shared_ptr<Flight>& flight, Value value) {
    {
      std::lock_guard lock(mutex_);
      flights_.erase(key);
    }
    {
      std::lock_guard lock(flight->mutex_);
      flight->value_ = std::move(value);
    }
    flight->done_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<Flight>> flights_;
};

}  // namespace kcache
