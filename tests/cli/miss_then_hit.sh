#!/usr/bin/env bash
# A miss compiles and stores; the same request in a new process is a user-tier
# hit with the same key and the same bytes.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_ok --source src/add.cl --output out/first.bin
first="$OUT" tier1="$TIER" key="$KEY" db1="$DB" target1="$TARGET" bytes1="$BYTES" elapsed1="$ELAPSED"
compile_ok --source src/add.cl --output out/second.bin

expect_eq "first compile: tier" compiled "$tier1"
expect_eq "second compile: tier" user "$TIER"
[[ "$key" =~ ^[0-9a-f]{32}$ ]] || fail "key: expected 32 lowercase hex digits, seen '$key'"
expect_eq "key of the hit vs the miss" "$key" "$KEY"
expect_eq "db" gfx906_60 "$db1"
expect_eq "db of the hit" gfx906_60 "$DB"
[[ "$target1" == gfx906* ]] || fail "target: expected gfx906 (or gfx906_60), seen '$target1'"
expect_eq "target of the hit" "$target1" "$TARGET"
size="$(stat -c %s src/add.cl)"
expect_eq "bytes of the miss (cp makes a copy of the source)" "$size" "$bytes1"
expect_eq "bytes of the hit" "$size" "$BYTES"
[[ "$elapsed1" =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] ||
  fail "elapsed_ms: expected a number >= 0, seen '$elapsed1' in $first"
cmp -s src/add.cl out/first.bin || fail "--output of the miss differs from the compiler's output (the source)"
cmp -s out/first.bin out/second.bin || fail "--output of the hit differs from the miss's"

# The entry is where the contract says: in the log <dir>/<version>/<db>.ukdb.
version="$(kcache_version)"
has_entry "$T/cache/$version" gfx906_60 "$key" ||
  fail "expected $key in $T/cache/$version/gfx906_60.ukdb; the cache holds: $(find "$T/cache" -type f) with $(entry_keys "$T/cache")"

# Another source is another key, and a miss.
compile_ok --source src/mul.cl
expect_eq "tier of a different source" compiled "$TIER"
expect_ne "key of a different source" "$key" "$KEY"

# Different options are another key too; the original request still hits.
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc
  --target gfx906_60 --source src/add.cl)
compile_raw "${FAKE_CC[@]}" --options "-DX=1"
expect_rc 0
expect_eq "tier with --options -DX=1" compiled "$TIER"
key_x1="$KEY"
compile_raw "${FAKE_CC[@]}" --options "-DX=2"
expect_rc 0
expect_eq "tier with --options -DX=2" compiled "$TIER"
expect_ne "key with -DX=2 vs -DX=1" "$key_x1" "$KEY"
compile_raw "${FAKE_CC[@]}" --options "-DX=1"
expect_rc 0
expect_eq "tier with --options -DX=1 again" user "$TIER"
expect_eq "key with -DX=1 again" "$key_x1" "$KEY"
compile_ok --source src/add.cl
expect_eq "tier of the first request again" user "$TIER"
expect_eq "key of the first request again" "$key" "$KEY"

# The text (non-JSON) form prints the tier and exits 0.
run compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl
expect_rc 0
[[ "$OUT" == user* ]] || fail "plain compile output: expected a line starting with 'user', seen '$OUT'"
pass
