// A cache test over a private folder and a fake environment: the Env hides
// the real KCACHE_* variables, the log is captured, the compiler is fake.
#pragma once

#include <gtest/gtest.h>
#include <kcache/cache.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/cache_internal.h"
#include "fakes/fake_compiler.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"

namespace kcache::testing {

class CacheFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    env.home = dir / "home";
    env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "cache";
    env.vars["KCACHE_SYSTEM_DB_PATH"] = dir / "system";
  }

  // A new cache (a new process, as far as the tiers can tell) whose
  // messages land in `log`.
  std::unique_ptr<Cache> open(CacheOptions options = {}) {
    options.log_sink = [this](LogLevel, std::string_view line) {
      std::lock_guard lock(log_mutex);
      log.emplace_back(line);
    };
    auto cache = open_cache_with_env(options, env);
    EXPECT_TRUE(cache.is_ok());
    return std::move(*cache);
  }

  static KernelRequest request(const std::string& source = "kernel void k() {}") {
    KernelRequest r;
    r.source = source;
    r.kernel_names = {"k"};
    r.target = *Target::parse("gfx906_60");
    return r;
  }

  int log_lines_containing(const std::string& text) {
    std::lock_guard lock(log_mutex);
    int n = 0;
    for (const auto& line : log) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

  TempFolder dir;
  FaultEnv env;
  FakeCompiler compiler;
  std::mutex log_mutex;
  std::vector<std::string> log;
};

}  // namespace kcache::testing
