#!/usr/bin/env bash
# kcache explain: which parts of two keys differ (an option, a header's
# content, the compiler's build), and why a request misses the cache.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc --target gfx906_60)
printf '#include "inc.h"\nkernel void n(global int* a) { a[0] = N; }\n' >src/uses_inc.cl
printf '#define N 1\n' >src/h1.h
printf '#define N 2\n' >src/h2.h

compile_raw "${FAKE_CC[@]}" --source src/add.cl
expect_rc 0
plain="$KEY"
compile_raw "${FAKE_CC[@]}" --source src/add.cl --options "-DX=1"
expect_rc 0
with_option="$KEY"
compile_raw "${FAKE_CC[@]}" --source src/uses_inc.cl --header inc.h=src/h1.h
expect_rc 0
with_header="$KEY"

run explain "${plain:0:8}" "${with_option:0:8}"
expect_rc 0
expect_contains "explain: one part differs" "1 part differs" "$OUT"
expect_contains "explain names the option" "option" "$OUT"
expect_contains "explain shows its value" "-DX=1" "$OUT"
run explain "${plain:0:8}" "${with_option:0:8}" --json
expect_rc 0
expect_eq "explain --json: one difference" 1 "$(json_py "$OUT" 'len(d["differences"])')"
expect_eq "explain --json: the first has no option" null "$(json_py "$OUT" 'd["differences"][0]["first"]')"
expect_eq "explain --json: the second's option" "-DX=1" "$(json_py "$OUT" 'd["differences"][0]["second"]')"

# The request as it was compiled: a hit.
run explain "${FAKE_CC[@]}" --source src/add.cl --json
expect_rc 0
expect_eq "explain of a cached request: its key" "$plain" "$(json_get "$OUT" key)"
expect_eq "explain of a cached request: in the cache" true "$(json_get "$OUT" in_cache)"
run explain "${FAKE_CC[@]}" --source src/add.cl
expect_contains "explain of a cached request says it hits" "a lookup hits" "$OUT"

# A header whose content changed: named as the part that differs.
run explain "${FAKE_CC[@]}" --source src/uses_inc.cl --header inc.h=src/h2.h --json
expect_rc 0
expect_eq "changed header: not in the cache" false "$(json_get "$OUT" in_cache)"
expect_eq "changed header: the closest is the entry with that header" "$with_header" \
  "$(json_py "$OUT" 'd["closest"][0]["key"]')"
expect_eq "changed header: what differs" header \
  "$(json_py "$OUT" '" ".join(x["field"] for x in d["closest"][0]["differences"])')"

# A copied cache seen by another compiler build: the build is named.
run explain --backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" \
  --compiler-id fake-cc-2 --target gfx906_60 --source src/add.cl
expect_rc 0
expect_contains "another compiler: a miss" "not in the cache" "$OUT"
expect_contains "another compiler: its build is named" "compiler's build" "$OUT"

run explain "${plain:0:8}"
expect_rc 2
run explain
expect_rc 2
run explain ffffffff eeeeeeee
expect_rc 1
expect_contains "explain of keys not there" "no entry of key ffffffff" "$ERR"
