#!/usr/bin/env bash
# The OpenCL ICD loader opened by the program itself under `kcache run` (the
# dlsym layer, docs/design.md §10.3): a program that opens libOpenCL with
# dlopen, by its soname and by its path, and looks clBuildProgram and the
# rest up on that handle (tests/layers/opencl/dlopen_probe.py, ctypes) sees
# what it sees without kcache (build status and log, kernel names, results,
# a build that fails), cold and warm; its builds are counted and the warm
# run compiles nothing; a failing build's error is printed by the program
# alone; KCACHE_LAYER_DISABLE=1 turns it off.
# Environment (CTest): KCACHE.
probe_py="$(cd "$(dirname "$0")" && pwd)/opencl/dlopen_probe.py"  # before fresh_env changes folder
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build
probe_setup ""  # not run under the sanitizers (CMakeLists.txt)

loader="$(/sbin/ldconfig -p 2>/dev/null | awk '/libOpenCL\.so\.1 .*x86-64/ {print $NF; exit}')"
names=(libOpenCL.so.1)
[[ -n "$loader" && -f "$loader" ]] && names+=("$loader")

for name in "${names[@]}"; do
  label=soname
  [[ "$name" == /* ]] && label=path
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache-$label"

  run_probe "$label.base" env python3 "$probe_py" "$name" "$T/inc"
  ((RC == 125)) && skip_backend opencl "$OUT"
  ((RC == 0)) || fail "the probe fails without kcache on $name: $OUT $ERR"
  grep -q '^source build: rc 0 status 0$' "$T/$label.base.out" ||
    fail "the probe's build fails without kcache on $name: $OUT"
  grep -q 'undeclared_probe_name' "$T/$label.base.out" ||
    fail "the broken build's log names no error without kcache: $OUT"

  run_probe "$label.cold" env "$KCACHE" run -- python3 "$probe_py" "$name" "$T/inc"
  ((RC == 0)) || fail "the probe fails under kcache run (cold) on $name: $ERR"
  same_as "$label.base" "$label.cold"
  ((compiles = $(stat_of compiles))) && ((compiles > 0)) ||
    fail "kcache run compiled nothing through kcache for $name (not served)"
  # What the platform's compiler prints of the failing build (PoCL: "1 error
  # generated.") is printed once, as without kcache: kcache compiled it, and
  # the program's build was not compiled a second time.
  expect_eq "the compiler's error lines on stderr (cold) for $name" \
    "$(grep -c 'error.* generated' "$T/$label.base.err")" "$(grep -c 'error.* generated' "$T/$label.cold.err")"
  [[ -z "$ERR" ]] || fail "kcache printed on the program's stderr (cold) for $name: $ERR"
  requests_cold="$(stat_of requests)"

  run_probe "$label.warm" env "$KCACHE" run -- python3 "$probe_py" "$name" "$T/inc"
  ((RC == 0)) || fail "the probe fails under kcache run (warm) on $name: $ERR"
  same_as "$label.base" "$label.warm"
  [[ -z "$ERR" ]] || fail "kcache printed on the program's stderr (warm) for $name: $ERR"
  # Warm, the failure is remembered: nothing is compiled, as for a hit.
  expect_eq "the compiler's error lines on stderr (warm) for $name" 0 \
    "$(grep -c 'error.* generated' "$T/$label.warm.err")"
  expect_eq "compiles after the warm run on $name" "$compiles" "$(stat_of compiles)"
  (($(stat_of user_hits) > 0)) || fail "the warm run on $name has no user-tier hits"
  ((requests_cold < $(stat_of requests))) || fail "the warm run on $name asked kcache nothing"

  # An edited header (through the build options' -I) is never served stale.
  echo '#define OFFSET 9' >"$T/inc/probe.h"
  run_probe "$label.base9" env python3 "$probe_py" "$name" "$T/inc"
  run_probe "$label.edited" env "$KCACHE" run -- python3 "$probe_py" "$name" "$T/inc"
  ((RC == 0)) || fail "the probe fails under kcache run after the header changed on $name"
  same_as "$label.base9" "$label.edited"
  diff -q "$T/$label.base.out" "$T/$label.base9.out" >/dev/null &&
    fail "the header's change shows in no result: the test cannot tell a stale binary"
  echo '#define OFFSET 7' >"$T/inc/probe.h"

  before="$(stat_of requests)"
  run_probe "$label.off" env KCACHE_LAYER_DISABLE=1 "$KCACHE" run -- python3 "$probe_py" "$name" "$T/inc"
  ((RC == 0)) || fail "the probe fails with KCACHE_LAYER_DISABLE=1 on $name"
  same_as "$label.base" "$label.off"
  expect_eq "requests with KCACHE_LAYER_DISABLE=1 on $name" "$before" "$(stat_of requests)"
  checked "libOpenCL opened as $name served"
done
pass
