/* kcache: a C API over the C++ library, for other languages.
 *
 * Every function returns 0 on success and a kcache status code (the values
 * of kcache::StatusCode, e.g. 3 for a compile error) on failure; it never
 * throws or aborts. When `error` is not NULL, a failure stores a message
 * there (the compiler's log follows the first line for a compile error),
 * which the caller frees with kcache_string_free; on success *error is set
 * to NULL.
 *
 * Handles are opaque. A kcache_cache may be used from several threads at
 * once; a kcache_compiler too. A kcache_kernel is owned by the caller and
 * freed with kcache_kernel_free.
 */
#ifndef KCACHE_C_API_H
#define KCACHE_C_API_H

#include <kcache/export.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kcache_cache kcache_cache;
typedef struct kcache_compiler kcache_compiler;
typedef struct kcache_kernel kcache_kernel;

/* Overrides for a cache; NULL fields keep the environment/build values. */
typedef struct kcache_options {
  const char* cache_dir;      /* like KCACHE_CUSTOM_CACHE_DIR */
  const char* system_db_path; /* like KCACHE_SYSTEM_DB_PATH */
  int disable_cache;          /* 1 disables, 0 leaves the setting alone */
} kcache_options;

/* What to compile. `source` is required; the rest may be NULL. */
typedef struct kcache_request {
  const char* source;
  const char* kernel_name; /* one entry point */
  const char* options;     /* compiler options, shell quoting */
  const char* target;      /* e.g. "gfx906_60"; NULL lets the backend choose */
} kcache_request;

/* Opens a cache; `options` may be NULL. */
KCACHE_EXPORT int kcache_open(const kcache_options* options, kcache_cache** out, char** error);
KCACHE_EXPORT void kcache_close(kcache_cache* cache);

/* Creates a compiler: backend "opencl" (command and compiler_id NULL) or
 * "command" (command required, compiler_id optional). */
KCACHE_EXPORT int kcache_compiler_create(const char* backend, const char* command,
                                         const char* compiler_id, kcache_compiler** out,
                                         char** error);
KCACHE_EXPORT void kcache_compiler_free(kcache_compiler* compiler);

/* Fetches a kernel through the cache, compiling it on a miss. */
KCACHE_EXPORT int kcache_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                                        const kcache_request* request, kcache_kernel** out,
                                        char** error);

/* The binary; valid until kcache_kernel_free. */
KCACHE_EXPORT const uint8_t* kcache_kernel_data(const kcache_kernel* kernel);
KCACHE_EXPORT size_t kcache_kernel_size(const kcache_kernel* kernel);
/* "memory", "system", "user", "remote" or "compiled"; static storage. */
KCACHE_EXPORT const char* kcache_kernel_tier(const kcache_kernel* kernel);
/* The key as 32 hex digits; valid until kcache_kernel_free. */
KCACHE_EXPORT const char* kcache_kernel_key(const kcache_kernel* kernel);
KCACHE_EXPORT void kcache_kernel_free(kcache_kernel* kernel);

/* Counts (kcache stats). New fields are added at the end; `size` says how
 * many bytes of the struct the caller has: set it to sizeof(kcache_stats). */
typedef struct kcache_stats {
  size_t size;
  uint64_t requests, memory_hits, system_hits, user_hits, compiles, compile_failures, failure_hits,
      compile_micros, compile_micros_saved, bytes_served, bytes_stored, evicted, expired,
      corrupt_entries, store_failures, lock_waits, lock_wait_micros, lock_timeouts, breaker_trips,
      rejected, uncacheable;
  /* With all_processes: what the user tier holds now, and since when
   * (Unix time) the counts run; 0 otherwise. */
  uint64_t entries, bytes, since_unix;
} kcache_stats;

/* This cache's counts (all_processes 0), or those of every process that
 * used its cache folder since they were last zeroed (1). */
KCACHE_EXPORT int kcache_get_stats(kcache_cache* cache, int all_processes, kcache_stats* out,
                                   char** error);
/* Sets every process's counts for the cache folder to zero. */
KCACHE_EXPORT int kcache_zero_stats(kcache_cache* cache, char** error);

KCACHE_EXPORT void kcache_string_free(char* text);
/* The library version, e.g. "0.2.0"; static storage. */
KCACHE_EXPORT const char* kcache_version(void);

#ifdef __cplusplus
}
#endif

#endif /* KCACHE_C_API_H */
