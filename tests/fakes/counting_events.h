// TierEvents that count the corrupt entries and files a tier reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "store/tier.h"

namespace kcache::testing {

class CountingEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string&, const Status&) override { ++count; }
  void on_evicted(std::string_view, std::uint64_t over_limits, std::uint64_t for_age) override {
    evicted += over_limits;
    expired += for_age;
  }
  int count = 0;
  std::uint64_t evicted = 0;  // reported by eviction passes
  std::uint64_t expired = 0;
};

}  // namespace kcache::testing
