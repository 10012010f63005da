// What the C API tests share: caches in a temporary folder, handles freed
// at the end of a test, and error messages as strings.
#pragma once

#include <kcache/c_api.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fakes/temp_folder.h"

namespace kcache::testing {

struct CacheCloser {
  void operator()(kcache_cache* cache) const { kcache_close(cache); }
};
struct CompilerFreer {
  void operator()(kcache_compiler* compiler) const { kcache_compiler_free(compiler); }
};
struct KernelFreer {
  void operator()(kcache_kernel* kernel) const { kcache_kernel_free(kernel); }
};
struct EntryFreer {
  void operator()(kcache_entry* entry) const { kcache_entry_free(entry); }
};
struct ClaimFreer {
  void operator()(kcache_client_claim* claim) const { kcache_claim_free(claim); }
};
using CachePtr = std::unique_ptr<kcache_cache, CacheCloser>;
using CompilerPtr = std::unique_ptr<kcache_compiler, CompilerFreer>;
using KernelPtr = std::unique_ptr<kcache_kernel, KernelFreer>;
using EntryPtr = std::unique_ptr<kcache_entry, EntryFreer>;
using ClaimPtr = std::unique_ptr<kcache_client_claim, ClaimFreer>;

// The message a failure left in `error` (freed and reset), or "" after a
// success.
inline std::string take_error(char*& error) {
  std::string text = error != nullptr ? error : "";
  kcache_string_free(error);
  error = nullptr;
  return text;
}

// Options for a cache in `dir`/cache, system packages in `dir`/system,
// messages from errors only.
inline kcache_cache_options options_in(const TempFolder& dir) {
  static thread_local std::string cache_dir, system_dir;
  cache_dir = dir / "cache";
  system_dir = dir / "system";
  kcache_cache_options options{};
  options.size = sizeof options;
  options.cache_dir = cache_dir.c_str();
  options.system_db_path = system_dir.c_str();
  options.log_level = "error";
  return options;
}

inline CachePtr open_with(const kcache_cache_options& options) {
  kcache_cache* cache = nullptr;
  char* error = nullptr;
  const int rc = kcache_cache_open(&options, &cache, &error);
  EXPECT_EQ(rc, KCACHE_OK) << take_error(error);
  return CachePtr(cache);
}

inline CachePtr open_in(const TempFolder& dir) { return open_with(options_in(dir)); }

// A command compiler running `command`, by default a copy of the source.
inline CompilerPtr copying_compiler(const char* command = "sh -c 'cat \"$0\" > \"$1\"' {in} {out}",
                                    const char* id = "test-cat") {
  kcache_compiler_config config{};
  config.size = sizeof config;
  config.backend = "command";
  config.command = command;
  config.compiler_id = id;
  kcache_compiler* compiler = nullptr;
  char* error = nullptr;
  EXPECT_EQ(kcache_compiler_new(&config, &compiler, &error), KCACHE_OK) << take_error(error);
  return CompilerPtr(compiler);
}

// Fetches `request`; a null pointer (and a test failure) when it fails.
inline KernelPtr fetch(kcache_cache* cache, kcache_compiler* compiler,
                       const kcache_kernel_request& request) {
  kcache_kernel* kernel = nullptr;
  char* error = nullptr;
  const int rc = kcache_kernel_get_or_compile(cache, compiler, &request, &kernel, &error);
  EXPECT_EQ(rc, KCACHE_OK) << kcache_status_name(rc) << ": " << take_error(error);
  return KernelPtr(kernel);
}

inline std::string bytes_of(const kcache_kernel* kernel) {
  return std::string(reinterpret_cast<const char*>(kcache_kernel_data(kernel)),
                     kcache_kernel_size(kernel));
}

inline std::string bytes_of(const kcache_entry* entry) {
  return std::string(reinterpret_cast<const char*>(kcache_entry_data(entry)),
                     kcache_entry_size(entry));
}

}  // namespace kcache::testing
