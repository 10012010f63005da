/* Uses an installed kcache through its C API, built with
 * `pkg-config --cflags --libs kcache`. Usage: c_consumer DIR FIRST_TIER
 * Opens a cache in DIR/cache (system folder DIR/sys), fetches one kernel
 * with the command backend twice: the first must come from FIRST_TIER,
 * the second from memory. Exit 0 when all is as expected. */
#include <kcache/c_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char* what, const char* expected, const char* seen) {
  if (!ok) {
    fprintf(stderr, "c_consumer: FAIL: %s: expected '%s', seen '%s'\n", what, expected, seen);
    ++failures;
  }
}

int main(int argc, char** argv) {
  char cache_dir[4096], sys_dir[4096];
  const char* source = "kernel void c_consumer(global int* a) { a[0] = 7; }\n";
  kcache_options options;
  kcache_request request;
  kcache_cache* cache = NULL;
  kcache_compiler* compiler = NULL;
  char* error = NULL;
  char key[65] = "";
  int i;

  if (argc != 3) {
    fprintf(stderr, "usage: c_consumer DIR FIRST_TIER\n");
    return 2;
  }
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", argv[1]);
  snprintf(sys_dir, sizeof sys_dir, "%s/sys", argv[1]);
  printf("kcache library %s\n", kcache_version());

  memset(&options, 0, sizeof options);
  options.cache_dir = cache_dir;
  options.system_db_path = sys_dir;
  if (kcache_open(&options, &cache, &error) != 0) {
    fprintf(stderr, "c_consumer: kcache_open: %s\n", error ? error : "(no message)");
    kcache_string_free(error);
    return 1;
  }
  if (kcache_compiler_create("command", "cp {in} {out}", "test-cp", &compiler, &error) != 0) {
    fprintf(stderr, "c_consumer: kcache_compiler_create: %s\n", error ? error : "(no message)");
    kcache_string_free(error);
    kcache_close(cache);
    return 1;
  }

  memset(&request, 0, sizeof request);
  request.source = source;
  request.kernel_name = "c_consumer";
  request.target = "gfx906_60";
  for (i = 0; i < 2; ++i) {
    kcache_kernel* kernel = NULL;
    const char* expected_tier = i == 0 ? argv[2] : "memory";
    const char* tier;
    int rc = kcache_get_or_compile(cache, compiler, &request, &kernel, &error);
    if (rc != 0) {
      fprintf(stderr, "c_consumer: kcache_get_or_compile %d: status %d: %s\n", i + 1, rc,
              error ? error : "(no message)");
      kcache_string_free(error);
      error = NULL;
      ++failures;
      continue;
    }
    expect(error == NULL, "error after a success", "NULL", "a message");
    tier = kcache_kernel_tier(kernel);
    printf("fetch %d: tier %s, %zu bytes, key %s\n", i + 1, tier, kcache_kernel_size(kernel),
           kcache_kernel_key(kernel));
    expect(strcmp(tier, expected_tier) == 0, "tier", expected_tier, tier);
    expect(kcache_kernel_size(kernel) == strlen(source) &&
               memcmp(kcache_kernel_data(kernel), source, strlen(source)) == 0,
           "binary", "a copy of the source", "other bytes");
    expect(strlen(kcache_kernel_key(kernel)) == 32, "key length", "32 hex digits",
           kcache_kernel_key(kernel));
    if (i == 0) {
      snprintf(key, sizeof key, "%s", kcache_kernel_key(kernel));
    } else {
      expect(strcmp(key, kcache_kernel_key(kernel)) == 0, "key of fetch 2", key,
             kcache_kernel_key(kernel));
    }
    kcache_kernel_free(kernel);
  }

  /* A compile error is a status with a message, not a crash. */
  {
    kcache_compiler* failing = NULL;
    kcache_kernel* kernel = NULL;
    if (kcache_compiler_create("command", "false {in} {out}", "test-false", &failing, &error) !=
        0) {
      fprintf(stderr, "c_consumer: kcache_compiler_create(false): %s\n", error ? error : "?");
      kcache_string_free(error);
      error = NULL;
      ++failures;
    } else {
      int rc = kcache_get_or_compile(cache, failing, &request, &kernel, &error);
      expect(rc != 0, "status of a failing compiler", "non-zero", "0");
      expect(error != NULL, "error message of a failing compiler", "a message", "NULL");
      if (rc == 0) kcache_kernel_free(kernel);
      kcache_string_free(error);
      error = NULL;
      kcache_compiler_free(failing);
    }
  }

  kcache_compiler_free(compiler);
  kcache_close(cache);
  if (failures == 0) printf("c_consumer: OK\n");
  return failures == 0 ? 0 : 1;
}
