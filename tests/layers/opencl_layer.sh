#!/usr/bin/env bash
# The OpenCL layer under a program that knows nothing of kcache (the probe,
# tests/layers/opencl/layer_probe.cpp): everything the program sees of its
# programs (build status and log, source, kernels, arguments, reference
# counts, results) is what it sees without the layer, cold and warm; a
# failing build is compiled once; the warm run compiles nothing; an edited
# header is never served stale; KCACHE_LAYER_DISABLE=1 turns it off;
# `kcache run` puts it in place.
# Environment (CTest): KCACHE, KCACHE_LAYER (the .so), LAYER_PROBE.
layer="${KCACHE_LAYER:?KCACHE_LAYER must name libkcache_opencl_layer.so}"
probe="${LAYER_PROBE:?LAYER_PROBE must name the probe program}"
sanitize="${KCACHE_SANITIZE:-}"
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build

probe_setup "$sanitize"

# probe NAME [ENV...]: runs the probe with ENV, its stdout in $T/NAME.out.
probe() { run_probe "$1" env "${@:2}" "$probe" "$T/inc"; }

probe base
if ((RC == 125)); then skip_backend opencl "$OUT"; fi
((RC == 0)) || fail "the probe fails without the layer"
grep -q '^done$' "$T/base.out" || fail "the probe did not finish"

probe cold LD_PRELOAD="$layer" KCACHE_LOG_LEVEL=info
((RC == 0)) || fail "the probe fails under the layer (cold)"
same_as base cold
grep -q 'OpenCL layer active' <<<"$ERR" || fail "no line says the layer is active at info level"
# The failing build is compiled once (kcache's compile answers it): what its
# compiler prints (PoCL: "1 error generated.") is printed as often as
# without the layer.
expect_eq "the compiler's error lines on stderr (cold)" \
  "$(grep -c 'error.* generated' "$T/base.err")" "$(grep -c 'error.* generated' "$T/cold.err")"
((compiles = $(stat_of compiles))) && ((compiles > 0)) || fail "the cold run compiled nothing through kcache"
requests_cold="$(stat_of requests)"

probe warm LD_PRELOAD="$layer"
((RC == 0)) || fail "the probe fails under the layer (warm)"
same_as base warm
[[ -z "$ERR" ]] || fail "the layer printed on the program's stderr without being asked: $ERR"
expect_eq "compiles after the warm run" "$compiles" "$(stat_of compiles)"
hits="$(stat_of user_hits)"
((hits > 0)) || fail "the warm run has no user-tier hits"
((requests_cold < $(stat_of requests))) || fail "the warm run asked kcache nothing"

# The work-group code PoCL compiled at the cold run's launches is kept with
# the entries when the programs are released (pocl_binary.h): they hold more
# than those of a run that launched nothing, and the warm run above, made
# from them, saw the same results.
stored_bytes() {  # stored_bytes DIR: the bytes of every entry in DIR
  KCACHE_CUSTOM_CACHE_DIR="$1" run list --json
  expect_rc 0
  python3 -S -E -c 'import json, sys; print(sum(e["bytes"] for e in json.loads(sys.argv[1])))' "$OUT"
}
if [[ -z "${LAYER_PROBE_NO_RUN:-}" ]]; then
  probe no_launch LD_PRELOAD="$layer" LAYER_PROBE_NO_RUN=1 KCACHE_CUSTOM_CACHE_DIR="$T/no_launch"
  ((RC == 0)) || fail "the probe fails under the layer without launches"
  launched="$(stored_bytes "$KCACHE_CUSTOM_CACHE_DIR")"
  built_only="$(stored_bytes "$T/no_launch")"
  ((launched > built_only)) ||
    fail "the entries of a run whose kernels ran hold $launched bytes, of one that ran none $built_only: no work-group code was kept"
fi

# An edited header (through the build options' -I) is never served stale.
echo '#define OFFSET 9' >"$T/inc/probe.h"
probe base9
probe edited LD_PRELOAD="$layer"
((RC == 0)) || fail "the probe fails under the layer after the header changed"
same_as base9 edited
if [[ -z "${LAYER_PROBE_NO_RUN:-}" ]] && diff -q "$T/base.out" "$T/base9.out" >/dev/null; then
  fail "the header's change shows in no result: the test cannot tell a stale binary"
fi

# Many processes at once on an empty folder: each sees what it sees alone.
pids=()
for i in 1 2 3 4; do
  env KCACHE_CUSTOM_CACHE_DIR="$T/many" LD_PRELOAD="$layer" "$probe" "$T/inc" 2 \
    >"$T/many$i.out" 2>"$T/many$i.err" &
  pids+=($!)
done
for i in 1 2 3 4; do
  wait "${pids[$((i - 1))]}" || fail "process $i of 4 under the layer failed: $(tail -n 5 "$T/many$i.err")"
done
env "$probe" "$T/inc" 2 >"$T/many_base.out" 2>/dev/null || fail "the probe fails with 2 threads"
for i in 1 2 3 4; do same_as many_base "many$i"; done

# Two devices in one context (PoCL's POCL_DEVICES): each built, each
# answering for itself, cold and warm.
probe two_base POCL_DEVICES="pthread pthread"
if ((RC == 0)) && grep -q '^devices: 2$' "$T/two_base.out"; then
  for run in two_cold two_warm; do
    probe "$run" POCL_DEVICES="pthread pthread" LD_PRELOAD="$layer"
    ((RC == 0)) || fail "the probe fails under the layer with two devices ($run)"
    same_as two_base "$run"
  done
else
  echo "note: this platform gives no second device; the two-device case did not run"
fi

# Off: the real calls only; kcache is asked nothing.
before="$(stat_of requests)"
probe off LD_PRELOAD="$layer" KCACHE_LAYER_DISABLE=1
((RC == 0)) || fail "the probe fails with KCACHE_LAYER_DISABLE=1"
same_as base9 off
expect_eq "requests with KCACHE_LAYER_DISABLE=1" "$before" "$(stat_of requests)"

# The cache off, or a cache folder that cannot be made: the program still
# sees what it sees without the layer.
probe cache_off LD_PRELOAD="$layer" KCACHE_DISABLE_CACHE=1
((RC == 0)) || fail "the probe fails under the layer with KCACHE_DISABLE_CACHE=1"
same_as base9 cache_off
echo 'not a folder' >"$T/a-file"
probe bad_dir LD_PRELOAD="$layer" KCACHE_CUSTOM_CACHE_DIR="$T/a-file/cache"
((RC == 0)) || fail "the probe fails under the layer when the cache folder cannot be made"
same_as base9 bad_dir

# kcache run -- PROGRAM: the layer in place, nothing else changed.
before="$(stat_of user_hits)"
LAST_CMD="kcache run -- probe"
"$KCACHE" run -- "$probe" "$T/inc" >"$T/run.out" 2>"$T/run.err"
RC=$?
OUT="$(cat "$T/run.out")"
ERR="$(cat "$T/run.err")"
((RC == 0)) || fail "kcache run -- probe failed"
same_as base9 run
(($(stat_of user_hits) > before)) || fail "kcache run: no hits, the layer was not in place"
pass
