#!/usr/bin/env bash
# KCACHE_CUSTOM_CACHE_DIR set but empty (a script's unset variable) is
# reported once, `kcache: Warning [Config] ...`, and the default folder is
# used, as for any malformed value; it used to be the default in silence.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

for blank in "" "   "; do
  KCACHE_CUSTOM_CACHE_DIR="$blank" run info --json
  expect_rc 0
  expect_eq "warnings for KCACHE_CUSTOM_CACHE_DIR='$blank'" 1 "$(warning_count "$ERR")"
  expect_contains "the warning" "kcache: Warning [Config] Ignoring KCACHE_CUSTOM_CACHE_DIR='$blank': expected a path; using '" "$ERR"
  expect_eq "cache_dir origin" "env XDG_CACHE_HOME" "$(setting "$OUT" cache_dir origin)"
  expect_eq "user dir" "$T/xdg/kcache/$(kcache_version)" "$(json_get "$OUT" user_dir)"
done

# A compile goes on, into the default folder, with the one warning.
KCACHE_CUSTOM_CACHE_DIR="" compile_ok --source src/add.cl
expect_eq "warnings of the compile" 1 "$(warning_count "$ERR")"
[[ -d "$T/xdg/kcache" ]] || fail "the compile did not use the default folder $T/xdg/kcache"
expect_eq "files in the (unset) custom folder" 0 "$(file_count "$T/cache")"

# Set: no warning.
run info
expect_rc 0
expect_eq "warnings with KCACHE_CUSTOM_CACHE_DIR set" 0 "$(warning_count "$ERR")"
pass
