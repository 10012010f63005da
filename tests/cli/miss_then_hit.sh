#!/usr/bin/env bash
# A miss compiles and stores; the same request in a new process is a user-tier
# hit with the same key and the same bytes.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_ok --source src/add.cl --output out/first.bin
first="$OUT"
compile_ok --source src/add.cl --output out/second.bin
second="$OUT"

for field in key tier target db bytes elapsed_ms; do
  json_get "$first" "$field" >/dev/null
done
expect_eq "first compile: tier" compiled "$(json_get "$first" tier)"
expect_eq "second compile: tier" user "$(json_get "$second" tier)"
key="$(json_get "$first" key)"
[[ "$key" =~ ^[0-9a-f]{64}$ ]] || fail "key: expected 64 lowercase hex digits, seen '$key'"
expect_eq "key of the hit vs the miss" "$key" "$(json_get "$second" key)"
expect_eq "db" gfx906_60 "$(json_get "$first" db)"
expect_eq "db of the hit" gfx906_60 "$(json_get "$second" db)"
target="$(json_get "$first" target)"
[[ "$target" == gfx906* ]] || fail "target: expected gfx906 (or gfx906_60), seen '$target'"
expect_eq "target of the hit" "$target" "$(json_get "$second" target)"
size="$(stat -c %s src/add.cl)"
expect_eq "bytes of the miss (cp makes a copy of the source)" "$size" "$(json_get "$first" bytes)"
expect_eq "bytes of the hit" "$size" "$(json_get "$second" bytes)"
json_py "$first" 'float(d["elapsed_ms"]) >= 0' | grep -qx true ||
  fail "elapsed_ms: expected a number >= 0, seen '$(json_get "$first" elapsed_ms)'"
cmp -s src/add.cl out/first.bin || fail "--output of the miss differs from the compiler's output (the source)"
cmp -s out/first.bin out/second.bin || fail "--output of the hit differs from the miss's"

# The entry is where the contract says: <dir>/<version>/<db>.entries/<k0k1>/<key>.
version="$(kcache_version)"
[[ -f "$T/cache/$version/gfx906_60.entries/${key:0:2}/$key" ]] ||
  fail "expected the entry file $T/cache/$version/gfx906_60.entries/${key:0:2}/$key; the cache holds: $(find "$T/cache" -type f)"

# Another source is another key, and a miss.
compile_ok --source src/mul.cl
expect_eq "tier of a different source" compiled "$(json_get "$OUT" tier)"
expect_ne "key of a different source" "$key" "$(json_get "$OUT" key)"

# Different options are another key too; the original request still hits.
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc
  --target gfx906_60 --json --source src/add.cl)
run compile "${FAKE_CC[@]}" --options "-DX=1"
expect_rc 0
expect_eq "tier with --options -DX=1" compiled "$(json_get "$OUT" tier)"
key_x1="$(json_get "$OUT" key)"
run compile "${FAKE_CC[@]}" --options "-DX=2"
expect_rc 0
expect_eq "tier with --options -DX=2" compiled "$(json_get "$OUT" tier)"
expect_ne "key with -DX=2 vs -DX=1" "$key_x1" "$(json_get "$OUT" key)"
run compile "${FAKE_CC[@]}" --options "-DX=1"
expect_rc 0
expect_eq "tier with --options -DX=1 again" user "$(json_get "$OUT" tier)"
expect_eq "key with -DX=1 again" "$key_x1" "$(json_get "$OUT" key)"
compile_ok --source src/add.cl
expect_eq "tier of the first request again" user "$(json_get "$OUT" tier)"
expect_eq "key of the first request again" "$key" "$(json_get "$OUT" key)"

# The text (non-JSON) form prints the tier and exits 0.
run compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl
expect_rc 0
[[ "$OUT" == user* ]] || fail "plain compile output: expected a line starting with 'user', seen '$OUT'"
pass
