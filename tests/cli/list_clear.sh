#!/usr/bin/env bash
# kcache list shows every entry of every database; clear removes them all.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

run list
expect_rc 0
expect_contains "kcache list of a new cache" "0 entries" "$OUT"
run list --json
expect_rc 0
expect_eq "kcache list --json of a new cache" "[]" "$(json_get "$OUT" "")"

compile_ok --source src/add.cl
k1="$KEY"
compile_ok --source src/mul.cl
k2="$KEY"
compile_ok --source src/add.cl --target sm_90
k3="$KEY"

run list
expect_rc 0
expect_contains "kcache list" "3 entries" "$OUT"
for k in "$k1" "$k2"; do
  expect_contains "kcache list shows ${k:0:16}" "${k:0:16}" "$OUT"
done
expect_contains "kcache list shows the database gfx906_60" gfx906_60 "$OUT"
expect_contains "kcache list shows the database sm_90" sm_90 "$OUT"

run list --json
expect_rc 0
expect_eq "list --json: entries" 3 "$(json_py "$OUT" 'len(d)')"
expect_eq "list --json: keys" "$(printf '%s\n' "$k1" "$k2" "$k3" | sort | tr '\n' ' ')" \
  "$(json_py "$OUT" '" ".join(sorted(e["key"] for e in d)) + " "')"
expect_eq "list --json: databases" "gfx906_60 gfx906_60 sm_90" "$(json_py "$OUT" '" ".join(sorted(e["db"] for e in d))')"
expect_eq "list --json: bytes of add.cl's entry" "$(stat -c %s src/add.cl)" \
  "$(json_py "$OUT" "[e['bytes'] for e in d if e['key'] == '$k1'][0]")"
expect_eq "list --json: backend" "command command command" "$(json_py "$OUT" '" ".join(e["backend"] for e in d)')"
for field in db key backend kernels bytes stored_bytes created; do
  json_py "$OUT" "[e['$field'] for e in d]" >/dev/null
done

run list --db gfx906_60 --json
expect_rc 0
expect_eq "list --db gfx906_60 --json: entries" 2 "$(json_py "$OUT" 'len(d)')"
run list --db sm_90
expect_rc 0
expect_contains "list --db sm_90" "1 entry," "$OUT"

run clear
expect_rc 0
expect_contains "kcache clear" "removed 3 entries" "$OUT"
run list
expect_rc 0
expect_contains "kcache list after clear" "0 entries" "$OUT"
expect_eq "entries in the logs after clear" "" "$(entry_keys "$T/cache")"
compile_ok --source src/add.cl
expect_eq "compile after clear: tier" compiled "$TIER"
compile_ok --source src/add.cl
expect_eq "compile after clear, again: tier" user "$TIER"
run clear --json
expect_rc 0
expect_eq "clear --json: removed" 1 "$(json_get "$OUT" removed)"
run clear --json
expect_rc 0
expect_eq "clear --json of an empty cache: removed" 0 "$(json_get "$OUT" removed)"

# clear touches only this version's folder.
mkdir -p "$T/cache/0.0.0-older"
echo keep >"$T/cache/0.0.0-older/keep"
run clear
expect_rc 0
[[ -f "$T/cache/0.0.0-older/keep" ]] || fail "kcache clear removed another version's folder"
pass
