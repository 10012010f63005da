#!/usr/bin/env bash
# A compile error: exit 1, the compiler's log on stderr, nothing cached.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc --target gfx906_60)
printf 'kernel void broken() { FAKE_COMPILE_ERROR }\n' >src/broken.cl

for i in 1 2; do
  compile_raw "${FAKE_CC[@]}" --source src/broken.cl --output out/broken.bin
  expect_rc 1
  expect_contains "stderr (attempt $i) holds the compiler's log" "error: FAKE_COMPILE_ERROR marker found" "$ERR"
  expect_eq "stdout (attempt $i)" "" "$OUT"
  [[ ! -e out/broken.bin ]] || fail "--output was written for a failed compile"
  run list
  expect_rc 0
  expect_contains "kcache list after a failed compile" "0 entries" "$OUT"
  run list --json
  expect_rc 0
  expect_eq "kcache list --json after a failed compile" 0 "$(json_py "$OUT" 'len(d)')"
  expect_eq "entry files after a failed compile" "" "$(entry_files "$T/cache")"
done

# The compiler works on a good source: compiled, then a hit.
compile_raw "${FAKE_CC[@]}" --source src/add.cl
expect_rc 0
expect_eq "good source: tier" compiled "$TIER"
compile_raw "${FAKE_CC[@]}" --source src/add.cl
expect_rc 0
expect_eq "good source again: tier" user "$TIER"

# A compiler that cannot be run is a failure too, and caches nothing.
run compile --backend command --command "$T/no-such-compiler {in} {out}" --compiler-id none \
  --target gfx906_60 --json --source src/mul.cl
expect_rc 1
[[ -n "$ERR" ]] || fail "a compiler that cannot be run: expected a message on stderr"
run list --json
expect_eq "entries after the good compile and a compiler that cannot run" 1 "$(json_py "$OUT" 'len(d)')"
pass
