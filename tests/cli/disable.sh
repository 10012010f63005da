#!/usr/bin/env bash
# KCACHE_DISABLE_CACHE: 1/true/yes/on in any case turns the cache off (every
# request compiles, nothing is created on disk); 0/false/no/off keep it on.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

before_sys="$(snapshot "$T/sys")"
for value in 1 true TRUE True yes YES yEs on ON oN; do
  export KCACHE_DISABLE_CACHE="$value"
  for i in 1 2; do
    compile_ok --source src/add.cl --output "out/disabled-$i.bin"
    expect_eq "KCACHE_DISABLE_CACHE=$value, compile $i: tier" compiled "$TIER"
    expect_eq "KCACHE_DISABLE_CACHE=$value, compile $i: cache_enabled" false "$ENABLED"
    cmp -s src/add.cl "out/disabled-$i.bin" || fail "KCACHE_DISABLE_CACHE=$value: --output is not the compiled binary"
    expect_not_contains "KCACHE_DISABLE_CACHE=$value: stderr (no system tier is read)" "Missing system database" "$ERR"
  done
  [[ ! -e "$T/cache" ]] || fail "KCACHE_DISABLE_CACHE=$value: expected nothing created, but $T/cache exists: $(find "$T/cache")"
  [[ ! -e "$T/xdg" ]] || fail "KCACHE_DISABLE_CACHE=$value: expected nothing created, but $T/xdg exists: $(find "$T/xdg")"
  [[ -z "$(ls -A "$T/home")" ]] || fail "KCACHE_DISABLE_CACHE=$value: expected nothing created in HOME, seen: $(find "$T/home")"
  expect_eq "KCACHE_DISABLE_CACHE=$value: the system folder" "$before_sys" "$(snapshot "$T/sys")"
  run info --json
  expect_rc 0
  json_vars "$OUT" enabled=enabled reason=disabled_reason
  expect_eq "KCACHE_DISABLE_CACHE=$value: info enabled" false "$enabled"
  expect_contains "KCACHE_DISABLE_CACHE=$value: info disabled_reason" KCACHE_DISABLE_CACHE "$reason"
  if [[ "$value" == 1 ]]; then
    expect_eq "KCACHE_DISABLE_CACHE=$value: info disable_cache origin" "env KCACHE_DISABLE_CACHE" "$(setting "$OUT" disable_cache origin)"
  fi
done
# The admin commands say the cache is off (a reported failure, exit 1).
export KCACHE_DISABLE_CACHE=1
run list
expect_rc 1
expect_contains "kcache list with the cache disabled" disabled "$ERR"

# The same with the default dir (no KCACHE_CUSTOM_CACHE_DIR, no XDG_CACHE_HOME).
(
  unset KCACHE_CUSTOM_CACHE_DIR XDG_CACHE_HOME
  export KCACHE_DISABLE_CACHE=Yes
  compile_ok --source src/add.cl
  expect_eq "disabled, default dir: tier" compiled "$TIER"
  [[ -z "$(ls -A "$T/home")" ]] || fail "disabled, default dir: expected nothing created in HOME, seen: $(find "$T/home")"
) || exit $?

# Values that keep the cache on: each gets its own cache dir, so the second
# compile must be a user hit.
for value in 0 false FALSE no No off OFF Off; do
  export KCACHE_DISABLE_CACHE="$value"
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache-$value"
  compile_ok --source src/add.cl
  expect_eq "KCACHE_DISABLE_CACHE=$value, first compile: tier" compiled "$TIER"
  expect_eq "KCACHE_DISABLE_CACHE=$value: cache_enabled" true "$ENABLED"
  compile_ok --source src/add.cl
  expect_eq "KCACHE_DISABLE_CACHE=$value, second compile: tier" user "$TIER"
  [[ -n "$(entry_keys "$T/cache-$value")" ]] || fail "KCACHE_DISABLE_CACHE=$value: expected an entry under $T/cache-$value"
done
pass
