// In-process single flight: of all threads that miss the same key at once,
// the first (the leader) does the work and the others wait for its result.
// Keys never wait on each other; no lock is held while the leader works.
// The cross-process lease (one compile per key across processes) plugs in
// around the leader's work.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "base/mutex.h"

namespace kcache {

template <class Key, class Value>
class SingleFlight {
 public:
  class Flight {
   public:
    // Blocks until the leader publishes the value.
    Value wait() {
      MutexLock lock(mutex_);
      while (!value_.has_value()) done_.wait(mutex_);
      return *value_;
    }
    // The same, giving up at `deadline` (nullopt).
    template <class Clock, class Duration>
    std::optional<Value> wait_until(std::chrono::time_point<Clock, Duration> deadline) {
      MutexLock lock(mutex_);
      while (!value_.has_value()) {
        if (!done_.wait_until(mutex_, deadline)) break;
      }
      if (!value_.has_value()) return std::nullopt;
      return *value_;
    }

   private:
    friend class SingleFlight;
    Mutex mutex_;
    CondVar done_;
    std::optional<Value> value_ GUARDED_BY(mutex_);
  };

  // Joins the flight for `key`. Returns the flight and whether the caller
  // leads it; a leader must call finish() exactly once.
  std::pair<std::shared_ptr<Flight>, bool> join(const Key& key) {
    MutexLock lock(mutex_);
    auto [it, inserted] = flights_.try_emplace(key);
    if (inserted) it->second = std::make_shared<Flight>();
    return {it->second, inserted};
  }

  // Publishes the leader's value to the waiters and ends the flight.
  void finish(const Key& key, const std::shared_ptr<Flight>& flight, Value value) {
    {
      MutexLock lock(mutex_);
      flights_.erase(key);
    }
    {
      MutexLock lock(flight->mutex_);
      flight->value_ = std::move(value);
    }
    flight->done_.notify_all();
  }

 private:
  Mutex mutex_;
  std::map<Key, std::shared_ptr<Flight>> flights_ GUARDED_BY(mutex_);
};

}  // namespace kcache
