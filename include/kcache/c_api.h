/* kcache: a C API over the C++ library, for other languages (Python binds
 * it with ctypes). The header is C99; LevelDB's c.h is the model.
 *
 * Status. Every function that can fail returns an int: KCACHE_OK (0) on
 * success, else one of the KCACHE_* status codes below (the values of
 * kcache::StatusCode, which kcache_status_name spells). It never throws or
 * aborts. When `error` is not NULL, a failure stores a message there (for
 * KCACHE_COMPILE_ERROR the compiler's log follows the first line), which
 * the caller frees with kcache_string_free; a success sets *error to NULL.
 * A miss is not a failure: kcache_get gives KCACHE_OK and a NULL entry.
 *
 * Ownership. Handles are opaque. Whatever a function hands out through an
 * `out` argument (a handle, a char*) belongs to the caller, who frees it
 * with the matching *_free function (kcache_string_free for text). A
 * `const char*` or `const uint8_t*` returned by an accessor is borrowed:
 * valid until the handle it came from is freed. Arguments are borrowed
 * for the call only, unless a comment says otherwise.
 *
 * Threads. A kcache_cache and a kcache_compiler may be used from several
 * threads at once. A kcache_kernel or kcache_entry may be read from several
 * threads at once. A kcache_client_claim is used by one thread at a time.
 * Kernels and entries own their bytes, and compilers stand alone: they
 * may outlive a cache. A claim holds a key of its cache: free it before
 * the cache is closed.
 *
 * Growing structs (the versioning rule). Every struct a caller fills in
 * (kcache_cache_options, kcache_compiler_config, kcache_kernel_request) and
 * kcache_stats, which the library fills in, starts with `size_t size`,
 * which the caller sets to sizeof the struct as its header declares it:
 *   - Fields are only ever appended, never removed, reordered or retyped;
 *     each version's fields are a prefix of the next version's.
 *   - Every field's zero value (NULL, 0) means "the default", so a struct
 *     cleared with memset or `= {sizeof x}` (or a ctypes Structure) asks
 *     for the defaults, and a field past the caller's size is read as zero.
 *   - Fields are pointers (function pointers too), size_t and 64-bit
 *     integers only: no version of a struct has padding, in which a later
 *     field could fall (c_api.cpp checks it).
 *   - The library reads the fields `size` covers and defaults the others:
 *     a program built against an older header keeps working. `size` must
 *     cover the struct's required fields and end where a field ends;
 *     anything else is KCACHE_INVALID_ARGUMENT. (kcache_stats goes the
 *     other way: the library writes what `size` covers.)
 *   - A size larger than the library knows (a program built against a
 *     newer header, run with an older library) is accepted: the library
 *     reads the fields it knows and ignores the rest. kcache_struct_size
 *     says how much of each struct this library reads, for a program that
 *     needs a newer field and must know whether it is honoured.
 * The first versions of two structs, kcache_options and kcache_request,
 * had no size field; they are kept, with kcache_open, kcache_get_or_compile
 * and kcache_compiler_create, for the programs built against them.
 *
 * Booleans in the sized structs are int64_t with three values: 0 keeps
 * the default (the environment, the build, kcache's), KCACHE_YES (or any
 * positive value) sets true, KCACHE_NO (or any negative value) false.
 *
 * Left out, as C++-only or administrative: KernelRequest::warmup (a C++
 * callback over a live OpenCL program); the administration of a cache
 * (list, verify, prune, gc, export, import: the kcache tool, or
 * kcache::CacheAdmin); the expert surface (kcache::AdvancedCache);
 * compilers written by the caller (kcache::Compiler subclasses).
 */
#ifndef KCACHE_C_API_H
#define KCACHE_C_API_H

#include <kcache/export.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes --------------------------------------------------------
 * One per kcache::StatusCode, with its value. */
#define KCACHE_OK 0
#define KCACHE_INVALID_ARGUMENT 1 /* the request or an option is malformed */
#define KCACHE_NOT_FOUND 2        /* a named thing (file, kernel, library) does not exist */
#define KCACHE_COMPILE_ERROR 3    /* the compiler rejected the source; the log follows */
#define KCACHE_IO_ERROR 4         /* a read, write, rename or sync failed */
#define KCACHE_CORRUPTION 5       /* stored bytes failed their checksum or do not parse */
#define KCACHE_TIMEOUT 6          /* a bounded wait (a compile, a lock) ran out */
#define KCACHE_UNAVAILABLE 7      /* a backend or service cannot be used here */
#define KCACHE_NOT_SUPPORTED 8    /* the operation is not offered here */
#define KCACHE_INTERNAL 9         /* a bug in kcache (or out of memory) */

/* Tri-state booleans of the sized structs (see the opening comment). */
#define KCACHE_DEFAULT 0
#define KCACHE_YES 1
#define KCACHE_NO (-1)

/* Levels of the messages a log function receives (kcache::LogLevel). */
#define KCACHE_LOG_ERROR 1
#define KCACHE_LOG_WARNING 2
#define KCACHE_LOG_INFO 3
#define KCACHE_LOG_DEBUG 4

/* The structs kcache_struct_size knows. */
#define KCACHE_STRUCT_CACHE_OPTIONS 1
#define KCACHE_STRUCT_COMPILER_CONFIG 2
#define KCACHE_STRUCT_KERNEL_REQUEST 3
#define KCACHE_STRUCT_STATS 4

/* What a claim came to (kcache_claim_state). */
#define KCACHE_CLAIM_FOUND 1 /* the entry is there (kcache_claim_entry): nothing to do */
#define KCACHE_CLAIM_HELD 2  /* this caller computes it, then finishes or abandons */
#define KCACHE_CLAIM_NOT_HELD                               \
  3 /* neither: the wait for another claimant ran out, or   \
     * this claim was finished or abandoned; the caller may \
     * compute and kcache_put all the same */

typedef struct kcache_cache kcache_cache;
typedef struct kcache_compiler kcache_compiler;
typedef struct kcache_kernel kcache_kernel;
typedef struct kcache_entry kcache_entry;
typedef struct kcache_client_claim kcache_client_claim;

/* ---- Common -------------------------------------------------------------- */

KCACHE_EXPORT void kcache_string_free(char* text);
/* The library version, e.g. "0.4.0"; static storage. */
KCACHE_EXPORT const char* kcache_version(void);
/* The name of a status code, e.g. "compile_error" for 3, "ok" for 0;
 * "unknown" for a value that is no code. Static storage. */
KCACHE_EXPORT const char* kcache_status_name(int code);
/* How many bytes of a struct (KCACHE_STRUCT_*) this library reads: its
 * sizeof in the library's header; 0 for an unknown struct. */
KCACHE_EXPORT size_t kcache_struct_size(int which);

/* ---- Caches -------------------------------------------------------------- */

/* Receives each message kcache would print, as one line without the
 * newline (valid during the call only), with its KCACHE_LOG_* level. Called
 * from any thread that uses the cache, possibly from several at once; it
 * must not call kcache. */
typedef void (*kcache_log_function)(void* context, int level, const char* line);

/* Overrides for a cache (kcache::CacheOptions). A NULL string or a 0 keeps
 * the environment's or the build's value. Sizes, counts and durations are
 * text, in the forms the environment variables take: "64M", "100000",
 * "500ms", "30d" (a bare number of seconds for a duration). */
typedef struct kcache_cache_options {
  size_t size;                      /* sizeof(kcache_cache_options) */
  const char* cache_dir;            /* KCACHE_CUSTOM_CACHE_DIR */
  const char* system_db_path;       /* KCACHE_SYSTEM_DB_PATH */
  int64_t disable_cache;            /* KCACHE_DISABLE_CACHE; tri-state */
  const char* log_level;            /* "quiet", "error", "warning", "info", "debug" */
  const char* memory_cache_size;    /* KCACHE_MEMORY_CACHE_SIZE; "0" turns memory off */
  const char* compression;          /* "none" or "zstd" */
  const char* max_size;             /* KCACHE_MAX_SIZE; "0": no limit */
  const char* max_entries;          /* KCACHE_MAX_ENTRIES; "0": no limit */
  const char* max_age;              /* KCACHE_MAX_AGE; "0": no limit */
  const char* lock_timeout;         /* KCACHE_LOCK_TIMEOUT */
  const char* failure_ttl;          /* KCACHE_FAILURE_TTL; "0": no negative cache */
  const char* record_path;          /* KCACHE_RECORD; "" records nothing */
  const char* trusted_keys;         /* KCACHE_TRUSTED_KEYS; ':'-separated */
  int64_t sync;                     /* KCACHE_SYNC; tri-state */
  int64_t shared_cache;             /* KCACHE_SHARED_CACHE; tri-state */
  int64_t read_environment;         /* KCACHE_NO: KCACHE_* variables are ignored */
  kcache_log_function log_function; /* NULL: messages go to stderr */
  void* log_context;                /* passed to log_function; borrowed while the cache lives */
} kcache_cache_options;

/* Opens a cache; `options` may be NULL (every default). Touches no file.
 * KCACHE_INVALID_ARGUMENT for a bad size or a malformed value. */
KCACHE_EXPORT int kcache_cache_open(const kcache_cache_options* options, kcache_cache** out,
                                    char** error);
KCACHE_EXPORT void kcache_close(kcache_cache* cache);

/* The first version of the options, without a size: kept for the programs
 * built against it. NULL fields keep the environment/build values. */
typedef struct kcache_options {
  const char* cache_dir;      /* like KCACHE_CUSTOM_CACHE_DIR */
  const char* system_db_path; /* like KCACHE_SYSTEM_DB_PATH */
  int disable_cache;          /* 1 disables, 0 leaves the setting alone */
} kcache_options;

/* Opens a cache with the first version's options; `options` may be NULL. */
KCACHE_EXPORT int kcache_open(const kcache_options* options, kcache_cache** out, char** error);

/* ---- Compilers ----------------------------------------------------------- */

/* How to build a compiler (kcache::CompilerConfig). `backend` is required:
 * "opencl", "nvrtc", "hip" or "command" (kcache_compiler_backends). A field
 * names the backends that read it; the others ignore it. */
typedef struct kcache_compiler_config {
  size_t size;         /* sizeof(kcache_compiler_config) */
  const char* backend; /* required */
  /* command: the command line, with {in} (a file holding the source), {out}
   * (the file to read back) and optionally {options}. */
  const char* command;
  /* command: a fixed identity; NULL stamps the program and the files the
   * command line names. */
  const char* compiler_id;
  /* command: the file name {in} gets; NULL: "kernel.src". */
  const char* command_input_name;
  /* opencl: the platform and device, counted from 1 as the ICD loader
   * lists them; 0 picks the first platform that has a device, and the
   * platform's first device. */
  int64_t opencl_platform;
  int64_t opencl_device;
  /* opencl: compile in the caller's cl_context for this cl_device_id
   * instead of one the compiler creates; borrowed, must outlive the
   * compiler. NULL: the compiler's own. */
  void* opencl_context;
  void* opencl_device_id;
  /* Every backend: option names to take as harmless (they read no file),
   * e.g. "--my-flag"; an unknown option that may name a file otherwise
   * makes a request uncached. */
  const char* const* harmless_options;
  size_t harmless_option_count;
  /* Every backend: where to keep what it learns about its compiler; NULL:
   * in the user cache folder; "-": nowhere. */
  const char* facts_dir;
  /* nvrtc: the libnvrtc to load (a path or soname); NULL: searched. */
  const char* nvrtc_library;
  /* nvrtc: put the toolkit's include folders on the include path; default
   * yes, tri-state. */
  int64_t nvrtc_toolkit_include;
  /* hip: the libamdhip64 holding hipRTC; NULL: KCACHE_HIP_LIBRARY, else
   * searched. */
  const char* hip_library;
  /* command and hip: the longest one compile may take, in milliseconds;
   * 0: the default (10 minutes); negative: no limit. At the deadline the
   * compile is killed and gives KCACHE_TIMEOUT. */
  int64_t timeout_ms;
} kcache_compiler_config;

/* Creates a compiler. KCACHE_INVALID_ARGUMENT for an unknown backend or a
 * bad config; KCACHE_UNAVAILABLE when its runtime cannot be loaded. */
KCACHE_EXPORT int kcache_compiler_new(const kcache_compiler_config* config, kcache_compiler** out,
                                      char** error);
/* The first version: backend "opencl" (command and compiler_id NULL) or
 * "command" (command required, compiler_id optional). */
KCACHE_EXPORT int kcache_compiler_create(const char* backend, const char* command,
                                         const char* compiler_id, kcache_compiler** out,
                                         char** error);
KCACHE_EXPORT void kcache_compiler_free(kcache_compiler* compiler);
/* Who compiles: the backend ("nvrtc"), the compiler's id and its version,
 * all part of every key; "" for a NULL compiler. */
KCACHE_EXPORT const char* kcache_compiler_backend(const kcache_compiler* compiler);
KCACHE_EXPORT const char* kcache_compiler_id(const kcache_compiler* compiler);
KCACHE_EXPORT const char* kcache_compiler_version(const kcache_compiler* compiler);
/* The backend names kcache_compiler_new accepts, comma-separated, e.g.
 * "opencl,nvrtc,hip,command"; static storage. */
KCACHE_EXPORT const char* kcache_compiler_backends(void);

/* ---- Kernels ------------------------------------------------------------- */

/* What to compile (kcache::KernelRequest), and how to fetch it. `source` is
 * required; an array may be NULL when its count is 0. */
typedef struct kcache_kernel_request {
  size_t size;        /* sizeof(kcache_kernel_request) */
  const char* source; /* required: the program text */
  /* Entry points; for nvrtc and hip, name expressions such as "axpy<256>"
   * (kcache_kernel_lowered_name gives the symbol). */
  const char* const* kernel_names;
  size_t kernel_name_count;
  const char* options; /* compiler options, one string, shell quoting */
  /* Headers given in memory: `#include "header_names[i]"` reads
   * header_contents[i]; looked up before the include folders. */
  const char* const* header_names;
  const char* const* header_contents;
  size_t header_count;
  /* Folders searched for headers on disk (as -I); every header found there
   * that the source can include is part of the key. */
  const char* const* include_dirs;
  size_t include_dir_count;
  /* nvrtc: the name the source is compiled under (the program name);
   * NULL: the backend's own. */
  const char* source_name;
  /* The target, e.g. "sm_90", "gfx906_60", "gfx90a:xnack-"; NULL or "":
   * the backend chooses (OpenCL: its device). */
  const char* target;
  /* Keep the binary in the memory tier; default yes, tri-state. */
  int64_t keep_in_memory;
} kcache_kernel_request;

/* Fetches a kernel through the cache, compiling it with `compiler` on a
 * miss. Errors: the compiler's (KCACHE_COMPILE_ERROR with its log,
 * KCACHE_UNAVAILABLE, KCACHE_TIMEOUT) and KCACHE_INVALID_ARGUMENT. */
KCACHE_EXPORT int kcache_kernel_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                                               const kcache_kernel_request* request,
                                               kcache_kernel** out, char** error);

/* The first version of a request, without a size: kept for the programs
 * built against it. `source` is required; the rest may be NULL. */
typedef struct kcache_request {
  const char* source;
  const char* kernel_name; /* one entry point */
  const char* options;     /* compiler options, shell quoting */
  const char* target;      /* e.g. "gfx906_60"; NULL lets the backend choose */
} kcache_request;

KCACHE_EXPORT int kcache_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                                        const kcache_request* request, kcache_kernel** out,
                                        char** error);

/* The binary. */
KCACHE_EXPORT const uint8_t* kcache_kernel_data(const kcache_kernel* kernel);
KCACHE_EXPORT size_t kcache_kernel_size(const kcache_kernel* kernel);
/* "memory", "system", "user", "remote" or "compiled"; static storage. */
KCACHE_EXPORT const char* kcache_kernel_tier(const kcache_kernel* kernel);
/* The key as 32 hex digits. */
KCACHE_EXPORT const char* kcache_kernel_key(const kcache_kernel* kernel);
/* The target it was compiled for, complete ("sm_90_132"), and the database
 * that holds it ("sm_90_132"). */
KCACHE_EXPORT const char* kcache_kernel_target(const kcache_kernel* kernel);
KCACHE_EXPORT const char* kcache_kernel_db(const kcache_kernel* kernel);
/* The compiler's messages when the tier is "compiled"; "" otherwise. */
KCACHE_EXPORT const char* kcache_kernel_compile_log(const kcache_kernel* kernel);
/* The value of the first metadata field called `name` (e.g. "format"), or
 * NULL when there is none. */
KCACHE_EXPORT const char* kcache_kernel_metadata(const kcache_kernel* kernel, const char* name);
/* Every metadata field, in order: names and values by index, NULL past
 * the count. */
KCACHE_EXPORT size_t kcache_kernel_metadata_count(const kcache_kernel* kernel);
KCACHE_EXPORT const char* kcache_kernel_metadata_name(const kcache_kernel* kernel, size_t index);
KCACHE_EXPORT const char* kcache_kernel_metadata_value(const kcache_kernel* kernel, size_t index);
/* The symbol to look up for `name_expression` (nvrtc and hip lower
 * "scale<16>" to "_Z5scaleILi16EEvPf"). When the backend did not lower it,
 * `name_expression` itself: the pointer passed in. NULL for NULL. */
KCACHE_EXPORT const char* kcache_kernel_lowered_name(const kcache_kernel* kernel,
                                                     const char* name_expression);
KCACHE_EXPORT void kcache_kernel_free(kcache_kernel* kernel);

/* ---- Client-keyed entries ------------------------------------------------
 * Bytes a program computed with its own compiler (Triton, Inductor, ...),
 * kept under its own key in a namespace of its own, in the same tiers as
 * kernels (database "client.<namespace>"). A namespace is 1 to 64 letters,
 * digits, '_', '-' and '.', not starting with '.'; a key is 1 to 4096 bytes
 * of anything (`key_size` of them, NUL bytes included). Metadata are
 * `metadata_count` name/value pairs of text (arrays may be NULL when the
 * count is 0). KCACHE_INVALID_ARGUMENT for a namespace or key out of
 * bounds; a cache problem (a damaged file) is a miss. */

/* The entry of `key` in `name_space`. A miss is KCACHE_OK with *out NULL. */
KCACHE_EXPORT int kcache_get(kcache_cache* cache, const char* name_space, const void* key,
                             size_t key_size, kcache_entry** out, char** error);
/* Keeps `size` bytes (at least 1) of `data` with the metadata under the
 * key: in memory and in the user tier, replacing what was there. */
KCACHE_EXPORT int kcache_put(kcache_cache* cache, const char* name_space, const void* key,
                             size_t key_size, const void* data, size_t size,
                             const char* const* metadata_names, const char* const* metadata_values,
                             size_t metadata_count, char** error);
/* Gets the entry, or else claims the key for this caller to compute: the
 * single flight of kernels, for client keys. Other threads and processes
 * that claim the key meanwhile wait (up to KCACHE_LOCK_TIMEOUT) and then
 * find what this caller finishes. kcache_claim_state says which. */
KCACHE_EXPORT int kcache_claim(kcache_cache* cache, const char* name_space, const void* key,
                               size_t key_size, kcache_client_claim** out, char** error);
/* KCACHE_CLAIM_FOUND, KCACHE_CLAIM_HELD or KCACHE_CLAIM_NOT_HELD (0 for
 * NULL). */
KCACHE_EXPORT int kcache_claim_state(const kcache_client_claim* claim);
/* The entry a found claim holds, borrowed: valid until kcache_claim_free;
 * NULL unless the state is KCACHE_CLAIM_FOUND. */
KCACHE_EXPORT const kcache_entry* kcache_claim_entry(const kcache_client_claim* claim);
/* Stores the computed bytes (as kcache_put), hands them to those waiting
 * and releases the key. KCACHE_INVALID_ARGUMENT unless the claim is held;
 * after the call it is not, whatever the result. */
KCACHE_EXPORT int kcache_claim_finish(kcache_client_claim* claim, const void* data, size_t size,
                                      const char* const* metadata_names,
                                      const char* const* metadata_values, size_t metadata_count,
                                      char** error);
/* Releases a held key without storing: one waiter claims it next. Nothing
 * for a claim not held. */
KCACHE_EXPORT void kcache_claim_abandon(kcache_client_claim* claim);
/* Frees a claim, abandoning it when it is still held. */
KCACHE_EXPORT void kcache_claim_free(kcache_client_claim* claim);

/* An entry's bytes, metadata (as a kernel's) and tier. */
KCACHE_EXPORT const uint8_t* kcache_entry_data(const kcache_entry* entry);
KCACHE_EXPORT size_t kcache_entry_size(const kcache_entry* entry);
KCACHE_EXPORT const char* kcache_entry_tier(const kcache_entry* entry);
KCACHE_EXPORT const char* kcache_entry_metadata(const kcache_entry* entry, const char* name);
KCACHE_EXPORT size_t kcache_entry_metadata_count(const kcache_entry* entry);
KCACHE_EXPORT const char* kcache_entry_metadata_name(const kcache_entry* entry, size_t index);
KCACHE_EXPORT const char* kcache_entry_metadata_value(const kcache_entry* entry, size_t index);
/* Frees an entry from kcache_get; never one from kcache_claim_entry. */
KCACHE_EXPORT void kcache_entry_free(kcache_entry* entry);

/* ---- Stats --------------------------------------------------------------- */

/* Counts (kcache stats). New fields are added at the end; `size` says how
 * many bytes of the struct the caller has: set it to sizeof(kcache_stats).
 * The library writes the fields `size` covers and no byte past it. */
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
/* Every count as one JSON object, in *json (free with kcache_string_free):
 *   "counts":     every count of kcache_stats, by the same names;
 *   "tiers":      [{"tier", "hits", "misses", "failures", "skipped", "trips"}];
 *   "namespaces": [{"name", "gets", "hits", "puts", "waits", "bytes_served",
 *                   "bytes_stored"}], the client-keyed entries, by name;
 *   "all_processes": false or true.
 * With all_processes, "counts" are every process's, as kcache_get_stats
 * gives them, plus "counted", "counts_problem", "since_unix", "entries",
 * "bytes" and "databases" as `kcache stats --json` shows them; the tier
 * and namespace counts are kept by each process only, and are then this
 * process's. Names are only ever added. */
KCACHE_EXPORT int kcache_stats_json(kcache_cache* cache, int all_processes, char** json,
                                    char** error);
/* Sets every process's counts for the cache folder to zero. */
KCACHE_EXPORT int kcache_zero_stats(kcache_cache* cache, char** error);

#ifdef __cplusplus
}
#endif

#endif /* KCACHE_C_API_H */
