// TierEvents that count the corrupt entries and files a tier reports.
#pragma once

#include <string>
#include <string_view>

#include "store/tier.h"

namespace kcache::testing {

class CountingEvents : public TierEvents {
 public:
  void on_corrupt(std::string_view, const std::string&, const Status&) override { ++count; }
  int count = 0;
};

}  // namespace kcache::testing
