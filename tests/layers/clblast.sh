#!/usr/bin/env bash
# A real program, unchanged, under the OpenCL layer: CLBlast's own test
# programs (Debian clblast-tests) on PoCL, with PoCL's cache off. Their
# own checks decide correctness: the same pass and fail counts without the
# layer, cold and warm; the warm run compiles nothing and every kernel
# comes from kcache. Environment (CTest): KCACHE, KCACHE_LAYER.
layer="${KCACHE_LAYER:?KCACHE_LAYER must name libkcache_opencl_layer.so}"
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build
export POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$T/pocl"

# Quick routines (a few seconds each here): level 1 and one level 2.
routines=(xaxpy xdot xgemv)


# counts FILE: "passed/failed/skipped" summed over a test program's output.
counts() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /test\(s\) passed/ {p += $1} /test\(s\) failed/ {f += $1} /test\(s\) skipped/ {s += $1}
    END {printf "%d/%d/%d\n", p, f, s}'
}

for routine in "${routines[@]}"; do
  program="clblast_test_${routine}"
  command -v "$program" >/dev/null || skip_backend clblast "$program is not installed (Debian: clblast-tests)"
  for mode in none cold warm; do
    preload=()
    [[ "$mode" != none ]] && preload=(LD_PRELOAD="$layer")
    LAST_CMD="$mode: $program"
    env "${preload[@]}" "$program" >"$T/$routine.$mode.out" 2>"$T/$routine.$mode.err"
    RC=$?
    OUT="$(tail -n 20 "$T/$routine.$mode.out")"
    ERR="$(tail -n 20 "$T/$routine.$mode.err")"
    ((RC == 0)) || fail "$program exits $RC ($mode)"
    [[ "$mode" == cold ]] && compiles_cold="$(stat_of compiles)"
  done
  base="$(counts "$T/$routine.none.out")"
  [[ "$base" != 0/* ]] || fail "$program passed no test without the layer ($base)"
  expect_eq "$program passed/failed/skipped, cold under the layer" "$base" "$(counts "$T/$routine.cold.out")"
  expect_eq "$program passed/failed/skipped, warm under the layer" "$base" "$(counts "$T/$routine.warm.out")"
  ((compiles_cold > 0)) || fail "$program compiled nothing through kcache"
  expect_eq "compiles after the warm run of $program" "$compiles_cold" "$(stat_of compiles)"
done
(($(stat_of user_hits) > 0)) || fail "no kernel came from the user cache"
pass "$(stat_of user_hits) kernels from kcache, $(stat_of compiles) compiled"
