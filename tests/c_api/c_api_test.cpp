// The C API, driven from C++: caches, compilers, kernels and the sized
// structs. Client-keyed entries, NVRTC's name expressions and the JSON
// stats have files of their own; c_api_c99_test.c drives it all from
// strict C99, and the installed-package test builds a C program against
// the installed header.
#include <kcache/c_api.h>
#include <kcache/version.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "c_api/c_api_fixture.h"
#include "c_api/c_api_internal.h"
#include "c_api/sized_struct.h"
#include "fakes/temp_folder.h"

namespace {

using kcache::testing::bytes_of;
using kcache::testing::CachePtr;
using kcache::testing::CompilerPtr;
using kcache::testing::copying_compiler;
using kcache::testing::fetch;
using kcache::testing::KernelPtr;
using kcache::testing::open_in;
using kcache::testing::open_with;
using kcache::testing::options_in;
using kcache::testing::take_error;
using kcache::testing::TempFolder;

const kcache::ResolvedConfig& config_of(const CachePtr& cache) {
  return cache.get()->cache->config();
}

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

// Each KCACHE_* status is its kcache::StatusCode, and has its name.
TEST(CApiTest, StatusConstantsAreTheStatusCodes) {
  const std::pair<int, kcache::StatusCode> codes[] = {
      {KCACHE_OK, kcache::StatusCode::kOk},
      {KCACHE_INVALID_ARGUMENT, kcache::StatusCode::kInvalidArgument},
      {KCACHE_NOT_FOUND, kcache::StatusCode::kNotFound},
      {KCACHE_COMPILE_ERROR, kcache::StatusCode::kCompileError},
      {KCACHE_IO_ERROR, kcache::StatusCode::kIoError},
      {KCACHE_CORRUPTION, kcache::StatusCode::kCorruption},
      {KCACHE_TIMEOUT, kcache::StatusCode::kTimeout},
      {KCACHE_UNAVAILABLE, kcache::StatusCode::kUnavailable},
      {KCACHE_NOT_SUPPORTED, kcache::StatusCode::kNotSupported},
      {KCACHE_INTERNAL, kcache::StatusCode::kInternal},
  };
  for (const auto& [c_code, code] : codes) {
    EXPECT_EQ(c_code, static_cast<int>(code));
    EXPECT_EQ(kcache_status_name(c_code), kcache::status_code_name(code));
  }
  EXPECT_STREQ(kcache_status_name(KCACHE_COMPILE_ERROR), "compile_error");
  EXPECT_STREQ(kcache_status_name(-1), "unknown");
  EXPECT_STREQ(kcache_status_name(KCACHE_INTERNAL + 1), "unknown");
}

TEST(CApiTest, StructSizesAreThisLibrarys) {
  EXPECT_EQ(kcache_struct_size(KCACHE_STRUCT_CACHE_OPTIONS), sizeof(kcache_cache_options));
  EXPECT_EQ(kcache_struct_size(KCACHE_STRUCT_COMPILER_CONFIG), sizeof(kcache_compiler_config));
  EXPECT_EQ(kcache_struct_size(KCACHE_STRUCT_KERNEL_REQUEST), sizeof(kcache_kernel_request));
  EXPECT_EQ(kcache_struct_size(KCACHE_STRUCT_STATS), sizeof(kcache_stats));
  EXPECT_EQ(kcache_struct_size(0), 0u);
  EXPECT_EQ(kcache_struct_size(99), 0u);
}

// Every field of kcache_cache_options reaches its setting, as an option.
TEST(CApiTest, CacheOptionsReachEverySetting) {
  TempFolder dir;
  const std::string record = dir / "record.txt";
  const std::string keys = dir / "keys.pub";
  kcache_cache_options options = options_in(dir);
  options.disable_cache = KCACHE_NO;
  options.log_level = "warning";
  options.memory_cache_size = "1M";
  options.compression = "none";
  options.max_size = "2G";
  options.max_entries = "1000";
  options.max_age = "30d";
  options.lock_timeout = "500ms";
  options.failure_ttl = "0";
  options.record_path = record.c_str();
  options.trusted_keys = keys.c_str();
  options.sync = KCACHE_NO;
  options.shared_cache = KCACHE_YES;
  CachePtr cache = open_with(options);
  ASSERT_NE(cache, nullptr);
  const kcache::ResolvedConfig& config = config_of(cache);
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.user_dir.rfind(dir / "cache/", 0), 0u) << config.user_dir;
  EXPECT_EQ(config.system_db_path, dir / "system");
  EXPECT_EQ(config.log_level, kcache::LogLevel::kWarning);
  EXPECT_EQ(config.memory_cache_size, 1u << 20);
  EXPECT_EQ(config.max_size, std::uint64_t{2} << 30);
  EXPECT_EQ(config.max_entries, 1000u);
  EXPECT_EQ(config.max_age, std::chrono::seconds(30 * 86400));
  EXPECT_EQ(config.lock_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(config.failure_ttl, std::chrono::milliseconds(0));
  EXPECT_EQ(config.record_path, record);
  EXPECT_EQ(config.trusted_keys, std::vector<std::string>{keys});
  EXPECT_FALSE(config.sync);
  EXPECT_TRUE(config.shared_cache);
  for (const char* name :
       {"cache_dir", "system_db_path", "disable_cache", "log_level", "memory_cache_size",
        "compression", "max_size", "max_entries", "max_age", "lock_timeout", "failure_ttl",
        "record", "trusted_keys", "sync", "shared_cache"}) {
    ASSERT_NE(config.find(name), nullptr) << name;
    EXPECT_EQ(config.find(name)->origin, "option") << name;
  }

  options.disable_cache = KCACHE_YES;
  CachePtr disabled = open_with(options);
  ASSERT_NE(disabled, nullptr);
  EXPECT_FALSE(config_of(disabled).enabled);
  EXPECT_EQ(config_of(disabled).disabled_reason, "disabled by the program");
}

// read_environment = KCACHE_NO: KCACHE_* variables are not read.
TEST(CApiTest, TheEnvironmentCanBeIgnored) {
  TempFolder dir;
  ASSERT_EQ(::setenv("KCACHE_MAX_ENTRIES", "5", 1), 0);
  kcache_cache_options options = options_in(dir);
  CachePtr reading = open_with(options);
  options.read_environment = KCACHE_NO;
  CachePtr ignoring = open_with(options);
  ::unsetenv("KCACHE_MAX_ENTRIES");
  ASSERT_NE(reading, nullptr);
  ASSERT_NE(ignoring, nullptr);
  EXPECT_EQ(config_of(reading).max_entries, 5u);
  EXPECT_EQ(config_of(ignoring).max_entries, 0u);
}

// The log function receives each message with its level and context.
TEST(CApiTest, MessagesGoToTheLogFunction) {
  struct Lines {
    std::mutex mutex;
    std::vector<std::pair<int, std::string>> seen;
  } lines;
  TempFolder dir;
  kcache_cache_options options = options_in(dir);
  options.log_level = "warning";
  options.compression = "bogus";  // warned about when the cache opens
  options.log_context = &lines;
  options.log_function = [](void* context, int level, const char* line) {
    auto* into = static_cast<Lines*>(context);
    std::lock_guard lock(into->mutex);
    into->seen.emplace_back(level, line);
  };
  CachePtr cache = open_with(options);
  ASSERT_NE(cache, nullptr);
  std::lock_guard lock(lines.mutex);
  ASSERT_FALSE(lines.seen.empty());
  EXPECT_EQ(lines.seen[0].first, KCACHE_LOG_WARNING);
  EXPECT_NE(lines.seen[0].second.find("bogus"), std::string::npos) << lines.seen[0].second;
}

// A program built against an older header passes a shorter struct: the
// fields it has are read, the others get their defaults, whatever lies
// past its size.
TEST(CApiTest, StructsOfAnOlderVersionGetDefaults) {
  TempFolder dir;
  const std::string cache_dir = dir / "cache";
  const std::string system_dir = dir / "system";
  struct OldOptions {  // a version that had three fields
    std::size_t size;
    const char* cache_dir;
    const char* system_db_path;
  } old_options{sizeof(OldOptions), cache_dir.c_str(), system_dir.c_str()};
  kcache_cache* opened = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_cache_open(reinterpret_cast<const kcache_cache_options*>(&old_options), &opened,
                              &error),
            KCACHE_OK)
      << take_error(error);
  CachePtr cache(opened);
  EXPECT_EQ(config_of(cache).user_dir.rfind(cache_dir + "/", 0), 0u);
  EXPECT_EQ(config_of(cache).find("max_size")->origin, "default");

  // The same with a whole struct whose later fields hold what would fail.
  kcache_cache_options options = options_in(dir);
  options.size = KCACHE_C_FIELD_END(kcache_cache_options, system_db_path);
  options.log_level = "nonsense";
  options.max_size = "bogus";
  CachePtr short_one = open_with(options);
  ASSERT_NE(short_one, nullptr);
  EXPECT_EQ(config_of(short_one).find("max_size")->origin, "default");
  EXPECT_EQ(config_of(short_one).find("log_level")->origin, "default");

  struct OldCompilerConfig {  // backend, command and compiler_id
    std::size_t size;
    const char* backend;
    const char* command;
    const char* compiler_id;
  } old_config{sizeof(OldCompilerConfig), "command", "sh -c 'cat \"$0\" > \"$1\"' {in} {out}",
               "test-cat"};
  kcache_compiler* made = nullptr;
  ASSERT_EQ(kcache_compiler_new(reinterpret_cast<const kcache_compiler_config*>(&old_config), &made,
                                &error),
            KCACHE_OK)
      << take_error(error);
  CompilerPtr compiler(made);

  struct OldRequest {  // the source only
    std::size_t size;
    const char* source;
  } old_request{sizeof(OldRequest), "old source"};
  kcache_kernel* fetched = nullptr;
  ASSERT_EQ(kcache_kernel_get_or_compile(
                cache.get(), compiler.get(),
                reinterpret_cast<const kcache_kernel_request*>(&old_request), &fetched, &error),
            KCACHE_OK)
      << take_error(error);
  KernelPtr old_kernel(fetched);
  EXPECT_EQ(bytes_of(old_kernel.get()), "old source");
  // Past its size, a target no request may have: not read.
  kcache_kernel_request request{};
  request.size = KCACHE_C_FIELD_END(kcache_kernel_request, source);
  request.source = "old source";
  request.target = "../not a target";
  request.keep_in_memory = KCACHE_NO;
  KernelPtr same = fetch(cache.get(), compiler.get(), request);
  ASSERT_NE(same, nullptr);
  EXPECT_STREQ(kcache_kernel_key(same.get()), kcache_kernel_key(old_kernel.get()));
  EXPECT_STREQ(kcache_kernel_tier(same.get()), "memory");  // keep_in_memory unread
}

// A program built against a newer header passes a longer struct: the
// library reads what it knows and ignores the rest.
TEST(CApiTest, StructsOfANewerVersionAreReadAsFarAsKnown) {
  TempFolder dir;
  struct NewerOptions {
    kcache_cache_options known;
    std::int64_t later_field;
  } options{options_in(dir), 42};
  options.known.size = sizeof options;
  kcache_cache* opened = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_cache_open(&options.known, &opened, &error), KCACHE_OK) << take_error(error);
  CachePtr cache(opened);

  struct NewerConfig {
    kcache_compiler_config known;
    const char* later_field;
  } config{};
  config.known.size = sizeof config;
  config.known.backend = "command";
  config.known.command = "cp {in} {out}";
  config.known.compiler_id = "test-cp";
  config.later_field = "anything";
  kcache_compiler* made = nullptr;
  ASSERT_EQ(kcache_compiler_new(&config.known, &made, &error), KCACHE_OK) << take_error(error);
  CompilerPtr compiler(made);

  struct NewerRequest {
    kcache_kernel_request known;
    std::int64_t later_field;
  } request{};
  request.known.size = sizeof request;
  request.known.source = "newer";
  request.later_field = -7;
  KernelPtr kernel = fetch(cache.get(), compiler.get(), request.known);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(bytes_of(kernel.get()), "newer");
}

// A size that is no version's (too small for the required fields, or
// ending inside a field) is an invalid argument that says so.
TEST(CApiTest, SizesOfNoVersionAreInvalid) {
  TempFolder dir;
  kcache_cache* cache = nullptr;
  char* error = nullptr;
  kcache_cache_options options = options_in(dir);
  for (std::size_t size : {std::size_t{0}, std::size_t{4}, sizeof(std::size_t) + 3}) {
    options.size = size;
    EXPECT_EQ(kcache_cache_open(&options, &cache, &error), KCACHE_INVALID_ARGUMENT) << size;
    EXPECT_EQ(cache, nullptr);
    EXPECT_NE(take_error(error).find("kcache_cache_options.size is " + std::to_string(size)),
              std::string::npos);
  }

  kcache_compiler_config config{};
  config.size = sizeof(std::size_t);  // no backend
  config.backend = "command";
  kcache_compiler* compiler = nullptr;
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("kcache_compiler_config.size"), std::string::npos);
  EXPECT_EQ(compiler, nullptr);

  CachePtr opened = open_in(dir);
  CompilerPtr copying = copying_compiler();
  kcache_kernel_request request{};
  request.size = sizeof(std::size_t);  // no source
  request.source = "src";
  kcache_kernel* kernel = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(opened.get(), copying.get(), &request, &kernel, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("kcache_kernel_request.size"), std::string::npos);
  request.size = KCACHE_C_FIELD_END(kcache_kernel_request, kernel_names) - 1;
  EXPECT_EQ(kcache_kernel_get_or_compile(opened.get(), copying.get(), &request, &kernel, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kernel, nullptr);
}

TEST(CApiTest, MalformedValuesAreInvalid) {
  TempFolder dir;
  const std::pair<const char * kcache_cache_options::*, const char*> bad[] = {
      {&kcache_cache_options::log_level, "loud"},
      {&kcache_cache_options::memory_cache_size, "12Q"},
      {&kcache_cache_options::max_size, "-1"},
      {&kcache_cache_options::max_entries, "1.5"},
      {&kcache_cache_options::max_age, "forever"},
      {&kcache_cache_options::lock_timeout, "soon"},
      {&kcache_cache_options::failure_ttl, "1 hour"},
  };
  for (const auto& [field, value] : bad) {
    kcache_cache_options options = options_in(dir);
    options.*field = value;
    kcache_cache* cache = nullptr;
    char* error = nullptr;
    EXPECT_EQ(kcache_cache_open(&options, &cache, &error), KCACHE_INVALID_ARGUMENT) << value;
    EXPECT_NE(take_error(error).find(value), std::string::npos);
    EXPECT_EQ(cache, nullptr);
  }

  kcache_compiler_config config{};
  config.size = sizeof config;
  config.backend = "opencl";
  config.opencl_platform = -1;
  kcache_compiler* compiler = nullptr;
  char* error = nullptr;
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("count from 1"), std::string::npos);
  config.backend = "command";
  config.command = "cp {in} {out}";
  config.opencl_platform = 0;
  config.harmless_option_count = 1;  // and no array
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("harmless_options is NULL"), std::string::npos);
  config.backend = "nonsense";
  config.harmless_option_count = 0;
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("unknown backend"), std::string::npos);

  CachePtr cache = open_in(dir);
  CompilerPtr copying = copying_compiler();
  const char* with_a_hole[] = {"a", nullptr};
  const char* const contents[] = {"x", "y"};
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "src";
  request.kernel_names = with_a_hole;
  request.kernel_name_count = 2;
  kcache_kernel* kernel = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), copying.get(), &request, &kernel, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("kernel_names[1] is NULL"), std::string::npos);
  request.kernel_name_count = 1;
  request.header_names = with_a_hole;
  request.header_contents = contents;
  request.header_count = 2;
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), copying.get(), &request, &kernel, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("header_names[1] is NULL"), std::string::npos);
  request.header_count = 0;
  request.include_dirs = nullptr;
  request.include_dir_count = 3;
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), copying.get(), &request, &kernel, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("include_dirs is NULL"), std::string::npos);
  request.include_dir_count = 0;
  request.target = "../x";
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), copying.get(), &request, &kernel, nullptr),
            KCACHE_INVALID_ARGUMENT);
  request.target = nullptr;
  request.source = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), copying.get(), &request, &kernel, &error),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("source is NULL"), std::string::npos);
  EXPECT_EQ(kernel, nullptr);
}

// NULL where a handle or an out argument belongs: a status, never a crash;
// accessors answer nothing.
TEST(CApiTest, NullArgumentsFailOrAnswerNothing) {
  TempFolder dir;
  char* error = nullptr;
  kcache_cache* cache = nullptr;
  EXPECT_EQ(kcache_cache_open(nullptr, nullptr, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error), "");
  EXPECT_EQ(kcache_open(nullptr, nullptr, nullptr), KCACHE_INVALID_ARGUMENT);
  kcache_compiler* compiler = nullptr;
  EXPECT_EQ(kcache_compiler_new(nullptr, &compiler, nullptr), KCACHE_INVALID_ARGUMENT);
  kcache_compiler_config config{};
  config.size = sizeof config;
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(take_error(error).find("backend is NULL"), std::string::npos);
  config.backend = "command";
  EXPECT_EQ(kcache_compiler_new(&config, nullptr, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_compiler_create(nullptr, nullptr, nullptr, &compiler, nullptr),
            KCACHE_INVALID_ARGUMENT);

  CachePtr opened = open_in(dir);
  CompilerPtr copying = copying_compiler();
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "src";
  kcache_kernel* kernel = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(nullptr, copying.get(), &request, &kernel, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_kernel_get_or_compile(opened.get(), nullptr, &request, &kernel, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_kernel_get_or_compile(opened.get(), copying.get(), nullptr, &kernel, nullptr),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_kernel_get_or_compile(opened.get(), copying.get(), &request, nullptr, nullptr),
            KCACHE_INVALID_ARGUMENT);
  kcache_stats stats{};
  stats.size = sizeof stats;
  EXPECT_EQ(kcache_get_stats(nullptr, 0, &stats, nullptr), KCACHE_INVALID_ARGUMENT);
  char* json = nullptr;
  EXPECT_EQ(kcache_stats_json(nullptr, 0, &json, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_stats_json(opened.get(), 0, nullptr, nullptr), KCACHE_INVALID_ARGUMENT);
  EXPECT_EQ(kcache_zero_stats(nullptr, nullptr), KCACHE_INVALID_ARGUMENT);

  EXPECT_EQ(kcache_kernel_data(nullptr), nullptr);
  EXPECT_EQ(kcache_kernel_size(nullptr), 0u);
  EXPECT_STREQ(kcache_kernel_tier(nullptr), "");
  EXPECT_STREQ(kcache_kernel_key(nullptr), "");
  EXPECT_STREQ(kcache_kernel_target(nullptr), "");
  EXPECT_STREQ(kcache_kernel_db(nullptr), "");
  EXPECT_STREQ(kcache_kernel_compile_log(nullptr), "");
  EXPECT_EQ(kcache_kernel_metadata(nullptr, "format"), nullptr);
  EXPECT_EQ(kcache_kernel_metadata_count(nullptr), 0u);
  EXPECT_EQ(kcache_kernel_metadata_name(nullptr, 0), nullptr);
  EXPECT_EQ(kcache_kernel_metadata_value(nullptr, 0), nullptr);
  EXPECT_EQ(kcache_kernel_lowered_name(nullptr, "k"), nullptr);
  EXPECT_STREQ(kcache_compiler_backend(nullptr), "");
  EXPECT_STREQ(kcache_compiler_id(nullptr), "");
  EXPECT_STREQ(kcache_compiler_version(nullptr), "");
  KernelPtr fetched = fetch(opened.get(), copying.get(), request);
  ASSERT_NE(fetched, nullptr);
  EXPECT_EQ(kcache_kernel_metadata(fetched.get(), nullptr), nullptr);
  EXPECT_EQ(kcache_kernel_lowered_name(fetched.get(), nullptr), nullptr);
  // Freeing nothing is nothing.
  kcache_close(nullptr);
  kcache_compiler_free(nullptr);
  kcache_kernel_free(nullptr);
  kcache_string_free(nullptr);
  EXPECT_EQ(cache, nullptr);
}

// The command backend's settings: the input file's name, the deadline and
// the options declared harmless.
TEST(CApiTest, CompilerConfigReachesTheCommandBackend) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  kcache_compiler_config config{};
  config.size = sizeof config;
  config.backend = "command";
  config.command = "sh -c 'basename \"$0\" > \"$1\"' {in} {out}";
  config.compiler_id = "test-name";
  config.command_input_name = "kernel.cu";
  kcache_compiler* made = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_compiler_new(&config, &made, &error), KCACHE_OK) << take_error(error);
  CompilerPtr naming(made);
  EXPECT_STREQ(kcache_compiler_backend(naming.get()), "command");
  EXPECT_NE(std::string(kcache_compiler_id(naming.get())).find("test-name"), std::string::npos)
      << kcache_compiler_id(naming.get());
  kcache_compiler_version(naming.get());  // whatever it is, it is text
  const std::string backends = kcache_compiler_backends();
  EXPECT_NE(backends.find("command"), std::string::npos) << backends;
  EXPECT_NE(backends.find("nvrtc"), std::string::npos) << backends;
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "src";
  KernelPtr named = fetch(cache.get(), naming.get(), request);
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(bytes_of(named.get()), "kernel.cu\n");

  config.command = "sh -c 'sleep 20' {in} {out}";
  config.compiler_id = "test-sleep";
  config.timeout_ms = 300;
  ASSERT_EQ(kcache_compiler_new(&config, &made, &error), KCACHE_OK) << take_error(error);
  CompilerPtr sleeping(made);
  const auto start = std::chrono::steady_clock::now();
  kcache_kernel* kernel = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(cache.get(), sleeping.get(), &request, &kernel, &error),
            KCACHE_TIMEOUT);
  EXPECT_NE(take_error(error), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(kernel, nullptr);

  // An option kcache does not know, which may name a file: uncached,
  // unless it is declared harmless.
  request.options = "--frobnicate=/etc/hostname";
  for (bool harmless : {false, true}) {
    const char* const names[] = {"--frobnicate"};
    config.command = "sh -c 'cat \"$0\" > \"$1\"' {in} {out}";
    config.compiler_id = "test-cat";
    config.timeout_ms = 0;
    config.harmless_options = harmless ? names : nullptr;
    config.harmless_option_count = harmless ? 1 : 0;
    ASSERT_EQ(kcache_compiler_new(&config, &made, &error), KCACHE_OK) << take_error(error);
    CompilerPtr copying(made);
    KernelPtr first = fetch(cache.get(), copying.get(), request);
    KernelPtr second = fetch(cache.get(), copying.get(), request);
    ASSERT_NE(second, nullptr);
    EXPECT_STREQ(kcache_kernel_tier(second.get()), harmless ? "memory" : "compiled") << harmless;
  }
}

// The vendor backends' settings reach them: a named library is the one
// loaded, a platform that is not there is refused.
TEST(CApiTest, CompilerConfigNamesTheVendorLibraries) {
  kcache_compiler_config config{};
  config.size = sizeof config;
  config.facts_dir = "-";
  kcache_compiler* compiler = nullptr;
  char* error = nullptr;
  config.backend = "nvrtc";
  config.nvrtc_library = "/nonexistent/libnvrtc.so.99";
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_UNAVAILABLE);
  EXPECT_NE(take_error(error).find("/nonexistent/libnvrtc.so.99"), std::string::npos);
  config.backend = "hip";
  config.hip_library = "/nonexistent/libamdhip64.so.99";
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_UNAVAILABLE);
  EXPECT_NE(take_error(error).find("/nonexistent/libamdhip64.so.99"), std::string::npos);
  EXPECT_EQ(compiler, nullptr);
}

// Every field of a request is read: each one changes the key (or, for
// keep_in_memory, where the kernel is kept); the kernel tells its target,
// database, log and metadata.
TEST(CApiTest, RequestCarriesEveryField) {
  TempFolder dir;
  kcache::testing::write_file(dir / "inc/disk.h", "#define ON_DISK 1\n");
  CachePtr cache = open_in(dir);
  CompilerPtr compiler =
      copying_compiler("sh -c 'echo careful >&2; cat \"$0\" > \"$1\"' {in} {out}", "test-warn");
  const std::string include_dir = dir / "inc";
  const char* const names[] = {"first", "second"};
  const char* const header_names[] = {"memory.h"};
  const char* header_contents[] = {"#define IN_MEMORY 1\n"};
  const char* const include_dirs[] = {include_dir.c_str()};
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "#include \"memory.h\"\n#include <disk.h>\nkernel void first() {}\n";
  request.kernel_names = names;
  request.kernel_name_count = 2;
  request.options = "-DX=1";
  request.header_names = header_names;
  request.header_contents = header_contents;
  request.header_count = 1;
  request.include_dirs = include_dirs;
  request.include_dir_count = 1;
  request.source_name = "program.cl";
  request.target = "gfx906_60";

  KernelPtr first = fetch(cache.get(), compiler.get(), request);
  ASSERT_NE(first, nullptr);
  EXPECT_STREQ(kcache_kernel_tier(first.get()), "compiled");
  EXPECT_STREQ(kcache_kernel_target(first.get()), "gfx906_60");
  EXPECT_STREQ(kcache_kernel_db(first.get()), "gfx906_60");
  EXPECT_NE(std::string(kcache_kernel_compile_log(first.get())).find("careful"), std::string::npos);
  EXPECT_STREQ(kcache_kernel_metadata(first.get(), "format"), "command-output");
  EXPECT_EQ(kcache_kernel_metadata(first.get(), "no such field"), nullptr);
  const std::size_t count = kcache_kernel_metadata_count(first.get());
  ASSERT_GE(count, 1u);
  bool listed = false;
  for (std::size_t i = 0; i < count; ++i) {
    listed |= std::string(kcache_kernel_metadata_name(first.get(), i)) == "format" &&
              std::string(kcache_kernel_metadata_value(first.get(), i)) == "command-output";
  }
  EXPECT_TRUE(listed);
  EXPECT_EQ(kcache_kernel_metadata_name(first.get(), count), nullptr);
  EXPECT_EQ(kcache_kernel_metadata_value(first.get(), count), nullptr);
  const char* expression = "first";
  EXPECT_EQ(kcache_kernel_lowered_name(first.get(), expression), expression);  // not lowered
  KernelPtr again = fetch(cache.get(), compiler.get(), request);
  ASSERT_NE(again, nullptr);
  EXPECT_STREQ(kcache_kernel_tier(again.get()), "memory");
  EXPECT_STREQ(kcache_kernel_compile_log(again.get()), "");
  const std::string key = kcache_kernel_key(first.get());

  const auto key_with = [&](auto&& change) {
    kcache_kernel_request changed = request;
    const char* contents[] = {header_contents[0]};
    changed.header_contents = contents;
    change(changed, contents);
    KernelPtr kernel = fetch(cache.get(), compiler.get(), changed);
    return kernel != nullptr ? std::string(kcache_kernel_key(kernel.get())) : std::string();
  };
  EXPECT_NE(key_with([](kcache_kernel_request& r, auto&) { r.kernel_name_count = 1; }), key);
  EXPECT_NE(key_with([](kcache_kernel_request& r, auto&) { r.options = "-DX=2"; }), key);
  EXPECT_NE(key_with([](kcache_kernel_request&, const char** contents) {
              contents[0] = "#define IN_MEMORY 2\n";
            }),
            key);
  EXPECT_NE(key_with([](kcache_kernel_request& r, auto&) { r.source_name = "other.cl"; }), key);
  EXPECT_NE(key_with([](kcache_kernel_request& r, auto&) { r.target = "gfx90a_110"; }), key);
  EXPECT_EQ(key_with([](kcache_kernel_request&, auto&) {}), key);
  kcache::testing::write_file(dir / "inc/disk.h", "#define ON_DISK 2\n");
  EXPECT_NE(key_with([](kcache_kernel_request&, auto&) {}), key);
  kcache::testing::write_file(dir / "inc/disk.h", "#define ON_DISK 1\n");
  EXPECT_EQ(key_with([](kcache_kernel_request&, auto&) {}), key);

  // keep_in_memory = KCACHE_NO: a later request reads the user tier.
  request.source = "kept on disk only";
  request.header_count = 0;
  request.keep_in_memory = KCACHE_NO;
  KernelPtr not_kept = fetch(cache.get(), compiler.get(), request);
  KernelPtr from_disk = fetch(cache.get(), compiler.get(), request);
  ASSERT_NE(from_disk, nullptr);
  EXPECT_STREQ(kcache_kernel_tier(from_disk.get()), "user");
}

// The first version's request and the sized one ask for the same kernel.
TEST(CApiTest, OldAndNewRequestsAreTheSameKernel) {
  TempFolder dir;
  CachePtr cache = open_in(dir);
  CompilerPtr compiler = copying_compiler();
  kcache_request old_request{"same", "k", "-DA=1", "gfx906_60"};
  kcache_kernel* kernel = nullptr;
  char* error = nullptr;
  ASSERT_EQ(kcache_get_or_compile(cache.get(), compiler.get(), &old_request, &kernel, &error),
            KCACHE_OK)
      << take_error(error);
  KernelPtr old_kernel(kernel);
  const char* const names[] = {"k"};
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "same";
  request.kernel_names = names;
  request.kernel_name_count = 1;
  request.options = "-DA=1";
  request.target = "gfx906_60";
  KernelPtr new_kernel = fetch(cache.get(), compiler.get(), request);
  ASSERT_NE(new_kernel, nullptr);
  EXPECT_STREQ(kcache_kernel_key(new_kernel.get()), kcache_kernel_key(old_kernel.get()));
  EXPECT_STREQ(kcache_kernel_tier(new_kernel.get()), "memory");
}

}  // namespace
