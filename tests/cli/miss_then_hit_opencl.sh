#!/usr/bin/env bash
# Miss then hit with a real compiler: the opencl backend (PoCL on a CPU).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_raw --backend opencl --source src/add.cl --kernel add --output out/first.bin
if ((RC != 0)); then
  if grep -Eiq 'no OpenCL (platform|device)|libOpenCL|cannot load|not available' <<<"$ERR"; then
    skip_backend opencl "no usable OpenCL platform: $(head -n 3 <<<"$ERR")"
  fi
  fail "kcache compile --backend opencl failed"
fi
tier1="$TIER" key="$KEY" db1="$DB" target1="$TARGET" bytes1="$BYTES"
compile_raw --backend opencl --source src/add.cl --kernel add --output out/second.bin
expect_rc 0

expect_eq "first compile: tier" compiled "$tier1"
expect_eq "second compile: tier" user "$TIER"
[[ "$key" =~ ^[0-9a-f]{32}$ ]] || fail "key: expected 32 lowercase hex digits, seen '$key'"
expect_eq "key of the hit vs the miss" "$key" "$KEY"
expect_eq "db of the hit vs the miss" "$db1" "$DB"
expect_eq "target of the hit vs the miss" "$target1" "$TARGET"
[[ -n "$target1" && -n "$db1" ]] || fail "target and db must not be empty: $OUT"
((bytes1 > 0)) || fail "bytes: expected > 0, seen $bytes1"
expect_eq "bytes of the hit" "$bytes1" "$BYTES"
expect_eq "size of --output" "$bytes1" "$(stat -c %s out/first.bin)"
cmp -s out/first.bin out/second.bin || fail "--output of the hit differs from the miss's"
[[ -f "$T/cache/$(kcache_version)/$db1.ukdb" ]] ||
  fail "expected the user database $T/cache/<version>/$db1.ukdb; the cache holds: $(find "$T/cache")"
pass
