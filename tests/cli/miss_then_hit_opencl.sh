#!/usr/bin/env bash
# Miss then hit with a real compiler: the opencl backend (PoCL on a CPU).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

run compile --backend opencl --source src/add.cl --kernel add --output out/first.bin --json
if ((RC != 0)); then
  if grep -Eiq 'no OpenCL (platform|device)|libOpenCL|cannot load|not available' <<<"$ERR"; then
    skip "no usable OpenCL platform: $(head -n 3 <<<"$ERR")"
  fi
  fail "kcache compile --backend opencl failed"
fi
first="$OUT"
run compile --backend opencl --source src/add.cl --kernel add --output out/second.bin --json
expect_rc 0
second="$OUT"

expect_eq "first compile: tier" compiled "$(json_get "$first" tier)"
expect_eq "second compile: tier" user "$(json_get "$second" tier)"
key="$(json_get "$first" key)"
[[ "$key" =~ ^[0-9a-f]{64}$ ]] || fail "key: expected 64 lowercase hex digits, seen '$key'"
expect_eq "key of the hit vs the miss" "$key" "$(json_get "$second" key)"
expect_eq "db of the hit vs the miss" "$(json_get "$first" db)" "$(json_get "$second" db)"
expect_eq "target of the hit vs the miss" "$(json_get "$first" target)" "$(json_get "$second" target)"
[[ -n "$(json_get "$first" target)" && -n "$(json_get "$first" db)" ]] || fail "target and db must not be empty: $first"
bytes="$(json_get "$first" bytes)"
((bytes > 0)) || fail "bytes: expected > 0, seen $bytes"
expect_eq "bytes of the hit" "$bytes" "$(json_get "$second" bytes)"
expect_eq "size of --output" "$bytes" "$(stat -c %s out/first.bin)"
cmp -s out/first.bin out/second.bin || fail "--output of the hit differs from the miss's"
[[ -f "$T/cache/$(kcache_version)/$(json_get "$first" db).ukdb" ]] ||
  fail "expected the user database $T/cache/<version>/$(json_get "$first" db).ukdb; the cache holds: $(find "$T/cache")"
pass
