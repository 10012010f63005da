#!/usr/bin/env bash
# A compile error: exit 1, the compiler's log on stderr, no binary cached;
# the error is remembered for KCACHE_FAILURE_TTL and forgotten on request.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc --target gfx906_60)
printf 'kernel void broken() { FAKE_COMPILE_ERROR }\n' >src/broken.cl

# No binary, ever; the error itself is remembered (KCACHE_FAILURE_TTL), so
# the second attempt answers it, log included, without compiling.
binaries() { json_py "$1" 'len([e for e in d if not e["failure"]])'; }
for i in 1 2; do
  compile_raw "${FAKE_CC[@]}" --source src/broken.cl --output out/broken.bin
  expect_rc 1
  expect_contains "stderr (attempt $i) holds the compiler's log" "error: FAKE_COMPILE_ERROR marker found" "$ERR"
  expect_eq "stdout (attempt $i)" "" "$OUT"
  ((i == 2)) && expect_contains "the second attempt is answered from the negative cache" "remembered" "$ERR"
  [[ ! -e out/broken.bin ]] || fail "--output was written for a failed compile"
  run list --json
  expect_rc 0
  expect_eq "binaries in kcache list --json after a failed compile" 0 "$(binaries "$OUT")"
  expect_eq "remembered failures after a failed compile" 1 "$(json_py "$OUT" 'len(d)')"
done

run clear --failures
expect_rc 0
expect_contains "kcache clear --failures" "removed 1 remembered compile errors" "$OUT"
compile_raw "${FAKE_CC[@]}" --source src/broken.cl
expect_rc 1
[[ "$ERR" != *remembered* ]] || fail "after clear --failures the source must be compiled again"
KCACHE_FAILURE_TTL=0 run clear --failures
compile_raw "${FAKE_CC[@]}" --source src/broken.cl
KCACHE_FAILURE_TTL=0 compile_raw "${FAKE_CC[@]}" --source src/broken.cl
expect_rc 1
[[ "$ERR" != *remembered* ]] || fail "KCACHE_FAILURE_TTL=0 must compile every time"

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
expect_eq "binaries after the good compile and a compiler that cannot run" 1 "$(binaries "$OUT")"
pass
