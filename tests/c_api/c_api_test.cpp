// The C API, driven from C++ (the installed-package test also builds a C
// program against it).
#include <kcache/c_api.h>
#include <kcache/version.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fakes/temp_folder.h"

namespace {

using kcache::testing::TempFolder;

TEST(CApiTest, OpenFetchTwiceAndFree) {
  TempFolder dir;
  const std::string cache_dir = dir / "cache";
  const std::string system_dir = dir / "system";
  kcache_options options{cache_dir.c_str(), system_dir.c_str(), 0};
  kcache_cache* cache = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_open(&options, &cache, &error), 0);
  EXPECT_EQ(error, nullptr);
  kcache_compiler* compiler = nullptr;
  ASSERT_EQ(kcache_compiler_create("command", "cp {in} {out}", "test-cp", &compiler, &error), 0)
      << error;

  kcache_request request{"the binary", "k", nullptr, "gfx906_60"};
  const char* tiers[2] = {"compiled", "memory"};
  for (const char* expected_tier : tiers) {
    kcache_kernel* kernel = nullptr;
    ASSERT_EQ(kcache_get_or_compile(cache, compiler, &request, &kernel, &error), 0) << error;
    EXPECT_STREQ(kcache_kernel_tier(kernel), expected_tier);
    ASSERT_EQ(kcache_kernel_size(kernel), std::strlen("the binary"));
    EXPECT_EQ(std::memcmp(kcache_kernel_data(kernel), "the binary", 10), 0);
    EXPECT_EQ(std::strlen(kcache_kernel_key(kernel)), 32u);
    kcache_kernel_free(kernel);
  }
  kcache_compiler_free(compiler);
  kcache_close(cache);
  EXPECT_STREQ(kcache_version(), KCACHE_VERSION_STRING);
}

// Counts of this cache and of every process on its folder; zeroing them.
TEST(CApiTest, StatsOfThisCacheAndOfTheFolder) {
  TempFolder dir;
  const std::string cache_dir = dir / "cache";
  const std::string system_dir = dir / "system";
  kcache_options options{cache_dir.c_str(), system_dir.c_str(), 0};
  kcache_cache* first = nullptr;
  kcache_cache* second = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_open(&options, &first, &error), 0);
  kcache_compiler* compiler = nullptr;
  ASSERT_EQ(kcache_compiler_create("command", "cp {in} {out}", "test-cp", &compiler, &error), 0);
  kcache_request request{"the binary", "k", nullptr, "gfx906_60"};
  kcache_kernel* kernel = nullptr;
  ASSERT_EQ(kcache_get_or_compile(first, compiler, &request, &kernel, &error), 0) << error;
  kcache_kernel_free(kernel);
  ASSERT_EQ(kcache_open(&options, &second, &error), 0);  // another program, say
  ASSERT_EQ(kcache_get_or_compile(second, compiler, &request, &kernel, &error), 0) << error;
  EXPECT_STREQ(kcache_kernel_tier(kernel), "user");
  kcache_kernel_free(kernel);

  kcache_stats mine{};
  mine.size = sizeof mine;
  ASSERT_EQ(kcache_get_stats(second, 0, &mine, &error), 0) << error;
  EXPECT_EQ(mine.requests, 1u);
  EXPECT_EQ(mine.user_hits, 1u);
  EXPECT_EQ(mine.compiles, 0u);
  EXPECT_EQ(mine.bytes_served, std::strlen("the binary"));
  kcache_stats all{};
  all.size = sizeof all;
  ASSERT_EQ(kcache_get_stats(second, 1, &all, &error), 0) << error;
  EXPECT_EQ(all.requests, 2u);
  EXPECT_EQ(all.compiles, 1u);
  EXPECT_EQ(all.user_hits, 1u);
  EXPECT_GT(all.compile_micros_saved, 0u);  // the hit saved the compile's time
  EXPECT_EQ(all.entries, 1u);
  EXPECT_GT(all.bytes, 0u);
  EXPECT_GT(all.since_unix, 0u);
  // A caller with an older, shorter struct gets only what it has room for.
  kcache_stats short_one{};
  std::memset(&short_one, 0xff, sizeof short_one);
  short_one.size = offsetof(kcache_stats, memory_hits);
  ASSERT_EQ(kcache_get_stats(second, 1, &short_one, &error), 0);
  EXPECT_EQ(short_one.requests, 2u);
  EXPECT_EQ(short_one.memory_hits, ~std::uint64_t{0});  // untouched

  ASSERT_EQ(kcache_zero_stats(first, &error), 0) << error;
  ASSERT_EQ(kcache_get_stats(second, 1, &all, &error), 0);
  EXPECT_EQ(all.requests, 0u);
  EXPECT_EQ(all.entries, 1u);  // zeroing counts removes no entry
  EXPECT_NE(kcache_get_stats(second, 1, nullptr, &error), 0);
  kcache_string_free(error);
  kcache_compiler_free(compiler);
  kcache_close(second);
  kcache_close(first);
}

TEST(CApiTest, ErrorsAreCodesAndMessages) {
  kcache_compiler* compiler = nullptr;
  char* error = nullptr;
  int rc = kcache_compiler_create("nonsense", nullptr, nullptr, &compiler, &error);
  EXPECT_NE(rc, 0);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("unknown backend"), std::string::npos);
  kcache_string_free(error);

  ASSERT_EQ(kcache_compiler_create("command", "sh -c 'echo oops >&2; exit 1' {in} {out}", "fail",
                                   &compiler, nullptr),
            0);
  kcache_cache* cache = nullptr;
  kcache_options disabled{nullptr, nullptr, 1};
  ASSERT_EQ(kcache_open(&disabled, &cache, nullptr), 0);
  kcache_request request{"src", nullptr, nullptr, nullptr};
  kcache_kernel* kernel = nullptr;
  rc = kcache_get_or_compile(cache, compiler, &request, &kernel, &error);
  EXPECT_EQ(rc, 3);  // kCompileError
  EXPECT_EQ(kernel, nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("oops"), std::string::npos);  // the log follows
  kcache_string_free(error);

  EXPECT_NE(kcache_get_or_compile(nullptr, compiler, &request, &kernel, nullptr), 0);
  kcache_request bad_target{"src", nullptr, nullptr, "../x"};
  EXPECT_EQ(kcache_get_or_compile(cache, compiler, &bad_target, &kernel, nullptr), 1);
  kcache_compiler_free(compiler);
  kcache_close(cache);
}

}  // namespace
