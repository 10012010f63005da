// Backends that must start: KCACHE_REQUIRE_BACKENDS is a comma list of
// backend names (CI sets "opencl,hip,nvrtc"). A test that cannot start a
// backend named there fails; elsewhere it skips, saying why. Only "the
// backend is missing" goes through here: a skip for a missing GPU stays a
// skip everywhere. Plain C++ (the benchmarks use it too); the gtest macro
// below needs <gtest/gtest.h> only where it is used.
#pragma once

#include <cstdlib>
#include <string_view>

namespace kcache::testing {

// Whether KCACHE_REQUIRE_BACKENDS names `backend` (spaces around a name
// are ignored; the names are case-sensitive, as the --backend values are).
inline bool backend_required(std::string_view backend) {
  const char* list = std::getenv("KCACHE_REQUIRE_BACKENDS");
  if (list == nullptr) return false;
  std::string_view rest(list);
  while (true) {
    const std::size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (!name.empty() && name == backend) return true;
    if (comma == std::string_view::npos) return false;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace kcache::testing

// In a test body or SetUp, where `backend` cannot start: skips, saying
// `why` (streamed as written: `"text: " << value` works), or fails with it when
// KCACHE_REQUIRE_BACKENDS names the backend. Either way it returns from the
// function, as GTEST_SKIP does:
//   if (!made) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", made.status().message());
#define KCACHE_SKIP_OR_FAIL_BACKEND(backend, why)                                         \
  do {                                                                                    \
    if (::kcache::testing::backend_required(backend)) {                                   \
      GTEST_FAIL() << "backend " << (backend)                                             \
                   << " is required (KCACHE_REQUIRE_BACKENDS) but cannot start: " << why; \
    } else {                                                                              \
      GTEST_SKIP() << "backend " << (backend) << " cannot start: " << why;                \
    }                                                                                     \
  } while (false)
