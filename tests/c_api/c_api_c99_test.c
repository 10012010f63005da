/* The whole C API from strict C99 (-std=c99 -pedantic -Werror -Wall
 * -Wextra): every function of kcache/c_api.h is called here, as a program
 * in C (or a ctypes binding) would call it. It works in a temporary folder
 * and exits 0 when every check holds, else 1, naming each failed check.
 * c99_covers_header.sh fails when a function of the header is not used
 * here.
 *
 * NVRTC (name expressions, lowered names) is tried; where it cannot start,
 * that part is skipped, saying why, unless KCACHE_REQUIRE_BACKENDS names
 * nvrtc, which makes it a failure. */
#define _XOPEN_SOURCE 700

#include <kcache/c_api.h>

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(condition) check((condition), #condition, __LINE__)

static int check(int ok, const char* what, int line) {
  if (!ok) {
    fprintf(stderr, "c_api_c99_test:%d: FAILED: %s\n", line, what);
    ++failures;
  }
  return ok;
}

/* Checks that a call succeeded; prints its status and message if not. */
static int check_ok(int rc, char* error, const char* what, int line) {
  if (rc != KCACHE_OK) {
    fprintf(stderr, "c_api_c99_test:%d: FAILED: %s: %s: %s\n", line, what, kcache_status_name(rc),
            error != NULL ? error : "(no message)");
    ++failures;
  }
  kcache_string_free(error);
  return rc == KCACHE_OK;
}

#define CHECK_OK(call) check_ok((call), error, #call, __LINE__)

static int same_text(const char* a, const char* b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static int contains(const char* text, const char* part) {
  return text != NULL && strstr(text, part) != NULL;
}

/* Whether KCACHE_REQUIRE_BACKENDS (a comma list) names `backend`. */
static int backend_required(const char* backend) {
  const char* list = getenv("KCACHE_REQUIRE_BACKENDS");
  size_t length = strlen(backend);
  while (list != NULL && *list != '\0') {
    const char* end = strchr(list, ',');
    size_t size = end != NULL ? (size_t)(end - list) : strlen(list);
    while (size > 0 && *list == ' ') ++list, --size;
    while (size > 0 && list[size - 1] == ' ') --size;
    if (size == length && strncmp(list, backend, length) == 0) return 1;
    list = end != NULL ? end + 1 : NULL;
  }
  return 0;
}

static void write_text(const char* path, const char* text) {
  FILE* file = fopen(path, "w");
  if (!CHECK(file != NULL)) return;
  fputs(text, file);
  fclose(file);
}

static int remove_one(const char* path, const struct stat* info, int flag, struct FTW* where) {
  (void)info;
  (void)flag;
  (void)where;
  return remove(path);
}

/* ---- Messages -------------------------------------------------------------- */

static int log_bad_levels = 0;

static void count_line(void* context, int level, const char* line) {
  int* lines = (int*)context;
  if (level < KCACHE_LOG_ERROR || level > KCACHE_LOG_DEBUG || line == NULL) ++log_bad_levels;
  ++*lines;
}

/* ---- The claim, from a second thread ---------------------------------------- */

struct waiter {
  kcache_cache* cache;
  int state;
  char bytes[64];
};

static void* claim_in_thread(void* argument) {
  struct waiter* waiter = (struct waiter*)argument;
  kcache_client_claim* claim = NULL;
  if (kcache_claim(waiter->cache, "c99", "shared-key", 10, &claim, NULL) != KCACHE_OK) {
    return NULL;
  }
  waiter->state = kcache_claim_state(claim);
  if (kcache_claim_entry(claim) != NULL) {
    const kcache_entry* entry = kcache_claim_entry(claim);
    size_t size = kcache_entry_size(entry) < sizeof waiter->bytes - 1 ? kcache_entry_size(entry)
                                                                      : sizeof waiter->bytes - 1;
    memcpy(waiter->bytes, kcache_entry_data(entry), size);
    waiter->bytes[size] = '\0';
  }
  kcache_claim_free(claim);
  return NULL;
}

/* ---- The parts ------------------------------------------------------------- */

static void common(void) {
  CHECK(strlen(kcache_version()) > 0);
  CHECK(same_text(kcache_status_name(KCACHE_OK), "ok"));
  CHECK(same_text(kcache_status_name(KCACHE_COMPILE_ERROR), "compile_error"));
  CHECK(same_text(kcache_status_name(KCACHE_TIMEOUT), "timeout"));
  CHECK(same_text(kcache_status_name(12345), "unknown"));
  CHECK(kcache_struct_size(KCACHE_STRUCT_CACHE_OPTIONS) == sizeof(kcache_cache_options));
  CHECK(kcache_struct_size(KCACHE_STRUCT_COMPILER_CONFIG) == sizeof(kcache_compiler_config));
  CHECK(kcache_struct_size(KCACHE_STRUCT_KERNEL_REQUEST) == sizeof(kcache_kernel_request));
  CHECK(kcache_struct_size(KCACHE_STRUCT_STATS) == sizeof(kcache_stats));
  CHECK(kcache_struct_size(0) == 0);
}

static kcache_cache* open_cache(const char* dir, int* lines) {
  char cache_dir[4096], system_dir[4096];
  kcache_cache_options options;
  kcache_cache* cache = NULL;
  char* error = NULL;
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
  snprintf(system_dir, sizeof system_dir, "%s/system", dir);
  memset(&options, 0, sizeof options);
  options.size = sizeof options;
  options.cache_dir = cache_dir;
  options.system_db_path = system_dir;
  options.log_level = "warning";
  options.compression = "bogus"; /* a warning, for the log function */
  options.max_size = "1G";
  options.lock_timeout = "60s";
  options.sync = KCACHE_NO;
  options.log_function = count_line;
  options.log_context = lines;

  /* A size that is no version's is refused, with a message. */
  options.size = 3;
  CHECK(kcache_cache_open(&options, &cache, &error) == KCACHE_INVALID_ARGUMENT);
  CHECK(contains(error, "kcache_cache_options.size"));
  kcache_string_free(error);
  error = NULL;
  CHECK(cache == NULL);
  /* A malformed value too. */
  options.size = sizeof options;
  options.max_size = "lots";
  CHECK(kcache_cache_open(&options, &cache, &error) == KCACHE_INVALID_ARGUMENT);
  CHECK(contains(error, "lots"));
  kcache_string_free(error);
  error = NULL;
  options.max_size = "1G";

  if (!CHECK_OK(kcache_cache_open(&options, &cache, &error))) return NULL;
  CHECK(*lines >= 1); /* the warning about "bogus" */
  CHECK(log_bad_levels == 0);
  return cache;
}

/* The first version's entry points, for programs built against it. */
static void first_version(const char* dir, kcache_cache* cache, const char* new_key) {
  char cache_dir[4096];
  kcache_options options;
  kcache_request request;
  kcache_cache* old_cache = NULL;
  kcache_compiler* compiler = NULL;
  kcache_kernel* kernel = NULL;
  char* error = NULL;
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
  memset(&options, 0, sizeof options);
  options.cache_dir = cache_dir;
  options.disable_cache = 1;
  if (CHECK_OK(kcache_open(&options, &old_cache, &error))) kcache_close(old_cache);

  error = NULL;
  if (!CHECK_OK(kcache_compiler_create("command", "sh -c 'cat \"$0\" > \"$1\"' {in} {out}",
                                       "c99-cat", &compiler, &error))) {
    return;
  }
  memset(&request, 0, sizeof request);
  request.source = "from C99\n";
  request.kernel_name = "k";
  request.target = "gfx906_60";
  error = NULL;
  if (CHECK_OK(kcache_get_or_compile(cache, compiler, &request, &kernel, &error))) {
    CHECK(same_text(kcache_kernel_key(kernel), new_key)); /* the same kernel as the new request's */
    kcache_kernel_free(kernel);
  }
  kcache_compiler_free(compiler);
}

static void kernels(const char* dir, kcache_cache* cache) {
  char include_dir[4096], header[4096];
  const char* harmless[] = {"--c99-flag"};
  const char* names[] = {"k"};
  const char* header_names[] = {"memory.h"};
  const char* header_contents[] = {"#define FROM_MEMORY 1\n"};
  const char* include_dirs[1];
  kcache_compiler_config config;
  kcache_kernel_request request;
  kcache_compiler* compiler = NULL;
  kcache_kernel* kernel = NULL;
  char* error = NULL;
  char key[33] = "";
  size_t i;
  int round;

  snprintf(include_dir, sizeof include_dir, "%s/inc", dir);
  snprintf(header, sizeof header, "%s/inc/disk.h", dir);
  CHECK(mkdir(include_dir, 0700) == 0);
  write_text(header, "#define FROM_DISK 1\n");
  include_dirs[0] = include_dir;

  memset(&config, 0, sizeof config);
  config.size = sizeof config;
  config.backend = "command";
  config.command = "sh -c 'echo c99 warns >&2; cat \"$0\" > \"$1\"' {in} {out}";
  config.compiler_id = "c99-cat";
  config.command_input_name = "kernel.cl";
  config.harmless_options = harmless;
  config.harmless_option_count = 1;
  config.timeout_ms = 60000;
  if (!CHECK_OK(kcache_compiler_new(&config, &compiler, &error))) return;
  CHECK(same_text(kcache_compiler_backend(compiler), "command"));
  CHECK(contains(kcache_compiler_id(compiler), "c99-cat"));
  CHECK(kcache_compiler_version(compiler) != NULL);
  CHECK(contains(kcache_compiler_backends(), "command"));

  memset(&request, 0, sizeof request);
  request.size = sizeof request;
  request.source = "#include \"memory.h\"\n#include <disk.h>\nkernel void k() {}\n";
  request.kernel_names = names;
  request.kernel_name_count = 1;
  request.options = "-DC99=1 --c99-flag=on";
  request.header_names = header_names;
  request.header_contents = header_contents;
  request.header_count = 1;
  request.include_dirs = include_dirs;
  request.include_dir_count = 1;
  request.source_name = "c99.cl";
  request.target = "gfx906_60";
  for (round = 0; round < 2; ++round) {
    error = NULL;
    if (!CHECK_OK(kcache_kernel_get_or_compile(cache, compiler, &request, &kernel, &error))) {
      continue;
    }
    CHECK(same_text(kcache_kernel_tier(kernel), round == 0 ? "compiled" : "memory"));
    CHECK(kcache_kernel_size(kernel) == strlen(request.source));
    CHECK(memcmp(kcache_kernel_data(kernel), request.source, strlen(request.source)) == 0);
    CHECK(strlen(kcache_kernel_key(kernel)) == 32);
    CHECK(same_text(kcache_kernel_target(kernel), "gfx906_60"));
    CHECK(same_text(kcache_kernel_db(kernel), "gfx906_60"));
    CHECK(round == 0 ? contains(kcache_kernel_compile_log(kernel), "c99 warns")
                     : same_text(kcache_kernel_compile_log(kernel), ""));
    CHECK(same_text(kcache_kernel_metadata(kernel, "format"), "command-output"));
    CHECK(kcache_kernel_metadata(kernel, "absent") == NULL);
    CHECK(kcache_kernel_metadata_count(kernel) >= 1);
    for (i = 0; i < kcache_kernel_metadata_count(kernel); ++i) {
      CHECK(kcache_kernel_metadata_name(kernel, i) != NULL);
      CHECK(kcache_kernel_metadata_value(kernel, i) != NULL);
    }
    CHECK(kcache_kernel_metadata_name(kernel, i) == NULL);
    CHECK(kcache_kernel_metadata_value(kernel, i) == NULL);
    CHECK(kcache_kernel_lowered_name(kernel, names[0]) == names[0]); /* not lowered */
    if (round == 0) {
      snprintf(key, sizeof key, "%s", kcache_kernel_key(kernel));
    } else {
      CHECK(same_text(kcache_kernel_key(kernel), key));
    }
    kcache_kernel_free(kernel);
  }

  /* An edited header on disk is another kernel. */
  write_text(header, "#define FROM_DISK 2\n");
  error = NULL;
  if (CHECK_OK(kcache_kernel_get_or_compile(cache, compiler, &request, &kernel, &error))) {
    CHECK(same_text(kcache_kernel_tier(kernel), "compiled"));
    CHECK(!same_text(kcache_kernel_key(kernel), key));
    kcache_kernel_free(kernel);
  }

  /* A struct of an older version: the fields past its size are defaults,
   * whatever they hold. */
  {
    struct old_request {
      size_t size;
      const char* source;
    } old_request;
    old_request.size = sizeof old_request;
    old_request.source = "from C99\n";
    error = NULL;
    if (CHECK_OK(kcache_kernel_get_or_compile(
            cache, compiler, (const kcache_kernel_request*)&old_request, &kernel, &error))) {
      CHECK(kcache_kernel_size(kernel) == strlen("from C99\n"));
      kcache_kernel_free(kernel);
    }
  }
  kcache_compiler_free(compiler);

  /* The new request of the first version's kernel: see first_version. */
  config.command = "sh -c 'cat \"$0\" > \"$1\"' {in} {out}";
  config.command_input_name = NULL;
  config.harmless_options = NULL;
  config.harmless_option_count = 0;
  error = NULL;
  if (!CHECK_OK(kcache_compiler_new(&config, &compiler, &error))) return;
  memset(&request, 0, sizeof request);
  request.size = sizeof request;
  request.source = "from C99\n";
  request.kernel_names = names;
  request.kernel_name_count = 1;
  request.target = "gfx906_60";
  request.keep_in_memory = KCACHE_YES;
  error = NULL;
  if (CHECK_OK(kcache_kernel_get_or_compile(cache, compiler, &request, &kernel, &error))) {
    first_version(dir, cache, kcache_kernel_key(kernel));
    kcache_kernel_free(kernel);
  }
  kcache_compiler_free(compiler);
}

static void nvrtc(kcache_cache* cache) {
  const char* names[] = {"scale<16>", "scale<32>"};
  const char* header_names[] = {"scale.h"};
  const char* header_contents[] = {
      "template <int TS>\n"
      "__global__ void scale(float* x, float a) { x[blockIdx.x * TS + threadIdx.x] *= a; }\n"};
  kcache_compiler_config config;
  kcache_kernel_request request;
  kcache_compiler* compiler = NULL;
  kcache_kernel* kernel = NULL;
  char* error = NULL;
  int rc;

  memset(&config, 0, sizeof config);
  config.size = sizeof config;
  config.backend = "nvrtc";
  config.facts_dir = "-";
  config.nvrtc_toolkit_include = KCACHE_YES;
  rc = kcache_compiler_new(&config, &compiler, &error);
  if (rc != KCACHE_OK) {
    if (backend_required("nvrtc")) {
      fprintf(stderr, "c_api_c99_test: FAILED: nvrtc is required but cannot start: %s\n", error);
      ++failures;
    } else {
      printf("c_api_c99_test: nvrtc cannot start, its part is skipped: %s\n", error);
    }
    kcache_string_free(error);
    return;
  }
  memset(&request, 0, sizeof request);
  request.size = sizeof request;
  request.source = "#include \"scale.h\"\n";
  request.kernel_names = names;
  request.kernel_name_count = 2;
  request.header_names = header_names;
  request.header_contents = header_contents;
  request.header_count = 1;
  request.source_name = "c99_scales.cu";
  request.target = "sm_90";
  if (CHECK_OK(kcache_kernel_get_or_compile(cache, compiler, &request, &kernel, &error))) {
    CHECK(same_text(kcache_kernel_lowered_name(kernel, "scale<16>"), "_Z5scaleILi16EEvPff"));
    CHECK(same_text(kcache_kernel_lowered_name(kernel, "scale<32>"), "_Z5scaleILi32EEvPff"));
    CHECK(same_text(kcache_kernel_metadata(kernel, "format"), "cubin"));
    CHECK(contains(kcache_kernel_metadata(kernel, "lowered"), "scale<"));
    kcache_kernel_free(kernel);
  }
  kcache_compiler_free(compiler);
}

static void client_entries(kcache_cache* cache) {
  static const char key[] = {'k', '\0', 'e', 'y'};
  const char* names[] = {"producer"};
  const char* values[] = {"c99"};
  kcache_entry* entry = NULL;
  kcache_client_claim* claim = NULL;
  struct waiter waiter;
  pthread_t thread;
  struct timespec pause;
  char* error = NULL;

  CHECK_OK(kcache_get(cache, "c99", key, sizeof key, &entry, &error));
  CHECK(entry == NULL); /* a miss: success, no entry */
  error = NULL;
  CHECK_OK(kcache_put(cache, "c99", key, sizeof key, "bytes", 5, names, values, 1, &error));
  error = NULL;
  if (CHECK_OK(kcache_get(cache, "c99", key, sizeof key, &entry, &error)) && CHECK(entry != NULL)) {
    CHECK(kcache_entry_size(entry) == 5 && memcmp(kcache_entry_data(entry), "bytes", 5) == 0);
    CHECK(same_text(kcache_entry_tier(entry), "memory"));
    CHECK(same_text(kcache_entry_metadata(entry, "producer"), "c99"));
    CHECK(kcache_entry_metadata_count(entry) == 1);
    CHECK(same_text(kcache_entry_metadata_name(entry, 0), "producer"));
    CHECK(same_text(kcache_entry_metadata_value(entry, 0), "c99"));
    CHECK(kcache_entry_metadata_name(entry, 1) == NULL);
    CHECK(kcache_entry_metadata_value(entry, 1) == NULL);
    kcache_entry_free(entry);
  }
  CHECK(kcache_get(cache, ".bad", key, sizeof key, &entry, NULL) == KCACHE_INVALID_ARGUMENT);

  /* The single flight: this thread holds the key, another waits for it. */
  error = NULL;
  if (!CHECK_OK(kcache_claim(cache, "c99", "shared-key", 10, &claim, &error))) return;
  CHECK(kcache_claim_state(claim) == KCACHE_CLAIM_HELD);
  CHECK(kcache_claim_entry(claim) == NULL);
  memset(&waiter, 0, sizeof waiter);
  waiter.cache = cache;
  if (!CHECK(pthread_create(&thread, NULL, claim_in_thread, &waiter) == 0)) {
    kcache_claim_free(claim);
    return;
  }
  pause.tv_sec = 0;
  pause.tv_nsec = 200 * 1000 * 1000;
  nanosleep(&pause, NULL);
  CHECK(waiter.state == 0); /* still waiting */
  error = NULL;
  CHECK_OK(kcache_claim_finish(claim, "once", 4, NULL, NULL, 0, &error));
  CHECK(kcache_claim_state(claim) == KCACHE_CLAIM_NOT_HELD);
  pthread_join(thread, NULL);
  CHECK(waiter.state == KCACHE_CLAIM_FOUND);
  CHECK(same_text(waiter.bytes, "once"));
  kcache_claim_free(claim);

  /* An abandoned claim holds nothing; freeing a held one abandons it. */
  claim = NULL;
  error = NULL;
  if (CHECK_OK(kcache_claim(cache, "c99", "dropped", 7, &claim, &error))) {
    CHECK(kcache_claim_state(claim) == KCACHE_CLAIM_HELD);
    kcache_claim_abandon(claim);
    CHECK(kcache_claim_state(claim) == KCACHE_CLAIM_NOT_HELD);
    CHECK(kcache_claim_finish(claim, "x", 1, NULL, NULL, 0, NULL) == KCACHE_INVALID_ARGUMENT);
    kcache_claim_free(claim);
  }
  claim = NULL;
  error = NULL;
  if (CHECK_OK(kcache_claim(cache, "c99", "dropped", 7, &claim, &error))) {
    CHECK(kcache_claim_state(claim) == KCACHE_CLAIM_HELD);
    kcache_claim_free(claim);
  }
}

static void stats(kcache_cache* cache) {
  kcache_stats counts;
  char* json = NULL;
  char* error = NULL;
  memset(&counts, 0, sizeof counts);
  counts.size = sizeof counts;
  if (CHECK_OK(kcache_get_stats(cache, 0, &counts, &error))) {
    CHECK(counts.requests >= 4);
    CHECK(counts.compiles >= 2);
  }
  error = NULL;
  if (CHECK_OK(kcache_get_stats(cache, 1, &counts, &error))) {
    CHECK(counts.entries >= 3);
    CHECK(counts.since_unix > 0);
  }
  error = NULL;
  if (CHECK_OK(kcache_stats_json(cache, 0, &json, &error))) {
    CHECK(contains(json, "\"counts\":{"));
    CHECK(contains(json, "\"compile_micros_saved\":"));
    CHECK(contains(json, "\"namespaces\":[{"));
    CHECK(contains(json, "\"name\":\"c99\""));
    CHECK(contains(json, "\"tiers\":[{"));
    kcache_string_free(json);
  }
  error = NULL;
  json = NULL;
  if (CHECK_OK(kcache_stats_json(cache, 1, &json, &error))) {
    CHECK(contains(json, "\"all_processes\":true"));
    CHECK(contains(json, "\"entries\":"));
    kcache_string_free(json);
  }
  error = NULL;
  CHECK_OK(kcache_zero_stats(cache, &error));
  error = NULL;
  if (CHECK_OK(kcache_get_stats(cache, 1, &counts, &error))) CHECK(counts.requests == 0);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  char dir[1024]; /* the folders under it fit the 4096 bytes of their buffers */
  kcache_cache* cache;
  int lines = 0;

  snprintf(dir, sizeof dir, "%s/kcache-c99-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("c_api_c99_test: mkdtemp");
    return 1;
  }
  common();
  cache = open_cache(dir, &lines);
  if (cache != NULL) {
    kernels(dir, cache);
    nvrtc(cache);
    client_entries(cache);
    stats(cache);
    kcache_close(cache);
  }
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  if (failures > 0) {
    fprintf(stderr, "c_api_c99_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_c99_test: OK\n");
  return 0;
}
