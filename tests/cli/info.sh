#!/usr/bin/env bash
# kcache info --json parses and holds the version, every setting of the
# contract with value and origin, the paths and whether the cache is on.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"

run info --json
expect_rc 0
info="$OUT"
for field in version enabled user_dir system_db_path settings; do
  json_get "$info" "$field" >/dev/null
done
expect_eq "version" "$version" "$(json_get "$info" version)"
expect_eq "enabled" true "$(json_get "$info" enabled)"
expect_eq "user_dir" "$T/cache/$version" "$(json_get "$info" user_dir)"
expect_eq "system_db_path" "$T/sys" "$(json_get "$info" system_db_path)"
for env in KCACHE_CUSTOM_CACHE_DIR KCACHE_DISABLE_CACHE KCACHE_SYSTEM_DB_PATH KCACHE_LOG_LEVEL; do
  n="$(json_py "$info" "len([s for s in d['settings'] if s.get('env') == '$env'])")"
  expect_eq "settings with env $env" 1 "$n"
  for field in name value origin; do
    json_py "$info" "[s['$field'] for s in d['settings'] if s.get('env') == '$env'][0]" >/dev/null
  done
done
expect_eq "log_level origin" default "$(setting "$info" log_level origin)"
[[ ! -e "$T/cache" ]] || fail "kcache info created the cache dir"

export KCACHE_LOG_LEVEL=Debug
run info --json
expect_eq "log_level origin with KCACHE_LOG_LEVEL" "env KCACHE_LOG_LEVEL" "$(setting "$OUT" log_level origin)"

# A malformed value falls back to the default, with a warning.
export KCACHE_LOG_LEVEL=loud
run info --json
expect_rc 0
expect_eq "log_level with KCACHE_LOG_LEVEL=loud" warning "$(setting "$OUT" log_level value)"
[[ "$(json_py "$OUT" 'len(d["warnings"])')" -ge 1 ]] || fail "KCACHE_LOG_LEVEL=loud: expected a warning in info --json, seen none"
export KCACHE_DISABLE_CACHE=maybe
run info --json
expect_rc 0
expect_eq "enabled with KCACHE_DISABLE_CACHE=maybe (malformed: default)" true "$(json_get "$OUT" enabled)"
unset KCACHE_LOG_LEVEL KCACHE_DISABLE_CACHE

# The text form.
run info
expect_rc 0
expect_contains "kcache info" "kcache $version" "$OUT"
expect_contains "kcache info" "$T/cache/$version" "$OUT"
expect_contains "kcache info" "KCACHE_CUSTOM_CACHE_DIR" "$OUT"
expect_contains "an empty system folder" "system packages ($T/sys): none" "$OUT"
expect_not_contains "an empty system folder is there" "no such folder" "$OUT"
KCACHE_SYSTEM_DB_PATH="$T/nowhere" run info
expect_rc 0
expect_contains "a system folder that is not there, said" "system packages ($T/nowhere): none (no such folder)" "$OUT"
KCACHE_SYSTEM_DB_PATH="$T/nowhere" run info --json
expect_eq "--json: a system folder that is not there" "no such folder" "$(json_get "$OUT" system_db_problem)"
touch "$T/a-file"
KCACHE_SYSTEM_DB_PATH="$T/a-file" run info
expect_contains "a file for the system folder, said" "system packages ($T/a-file): none (not a folder)" "$OUT"
run info --json
expect_eq "--json: the system folder is fine" "" "$(json_get "$OUT" system_db_problem)"

# A file name is any bytes: one that is not UTF-8, or holds control
# characters, in the system folder keeps --json valid JSON and the text
# form free of raw escapes.
printf 'not a package' >"$T/sys/"$'gfx\xff\e[31m.kdb'
run info --json
expect_rc 0
[[ "$(json_py "$OUT" 'len(d["packages"])')" == 1 ]] ||
  fail "info --json with a file name that is not UTF-8: $OUT"
run info
expect_rc 0
expect_contains "a control character shown escaped" 'gfx'$'\xff''\x1b[31m.kdb: does not apply' "$OUT"
[[ "$OUT" != *$'\e'* ]] || fail "kcache info printed a raw escape: $(cat -v <<<"$OUT")"
rm -f "$T/sys/"*.kdb
pass
