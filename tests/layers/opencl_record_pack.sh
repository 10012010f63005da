#!/usr/bin/env bash
# Issue 11's workflow for a program that knows nothing of kcache (the
# OpenCL probe, tests/layers/opencl/layer_probe.cpp): run under the layer
# with KCACHE_RECORD, packed for the device it ran on, installed; a fresh
# user cache then serves every kernel it can build from the package, none
# compiled, no warning printed, and the program sees what it sees without
# kcache (build status and log, kernels, results). The pack's keys are the
# program's: the layer's own library is no part of the OpenCL stack's
# identity.
# Environment (CTest): KCACHE, KCACHE_LAYER (the .so), LAYER_PROBE.
layer="${KCACHE_LAYER:?KCACHE_LAYER must name libkcache_opencl_layer.so}"
probe="${LAYER_PROBE:?LAYER_PROBE must name the probe program}"
sanitize="${KCACHE_SANITIZE:-}"
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build

probe_setup "$sanitize"

# probe NAME [ENV...]: the probe with ENV, its stdout in $T/NAME.out.
probe() { run_probe "$1" env "${@:2}" "$probe" "$T/inc"; }

probe base
if ((RC == 125)); then skip_backend opencl "$OUT"; fi
((RC == 0)) || fail "the probe fails without the layer"

probe recorded LD_PRELOAD="$layer" KCACHE_CUSTOM_CACHE_DIR="$T/recording" \
  KCACHE_RECORD="$T/m.jsonl"
((RC == 0)) || fail "the probe fails under the layer while recording: $ERR"
same_as base recorded
compiled="$(count_of "$T/recording" compiles)"
((compiled > 0)) || fail "the recording run compiled nothing through kcache"
targets="$(python3 -c '
import json, sys
print(" ".join(sorted({"%s_%d" % (l["target"]["arch"], l["target"]["units"])
                       for l in map(json.loads, filter(str.strip, open(sys.argv[1])))})))
' "$T/m.jsonl")" || fail "the manifest does not parse"
[[ -n "$targets" && "$targets" != *" "* ]] || fail "one device, one target: '$targets'"

# Recording works with the cache off (formats.md §4): the layer stays on
# to record, compiling each request; the same kernels are recorded.
probe recorded_off LD_PRELOAD="$layer" KCACHE_CUSTOM_CACHE_DIR="$T/recording-off" \
  KCACHE_DISABLE_CACHE=1 KCACHE_RECORD="$T/m-off.jsonl"
((RC == 0)) || fail "the probe fails under the layer recording with the cache off: $ERR"
same_as base recorded_off
keys_of() { python3 -c '
import json, sys
print(" ".join(sorted(json.loads(l)["key"] for l in open(sys.argv[1]) if l.strip())))' "$1"; }
[[ -s "$T/m-off.jsonl" ]] || fail "nothing recorded with the cache off"
expect_eq "the kernels recorded with the cache off" "$(keys_of "$T/m.jsonl")" "$(keys_of "$T/m-off.jsonl")"
[[ ! -e "$T/recording-off" ]] || fail "the cache off wrote $T/recording-off"

run pack --manifest "$T/m.jsonl" --target "$targets" --output "$T/pkg/$targets.kdb" --jobs 2
expect_rc 1  # the probe's own build errors, which no package holds
expect_contains "pack wrote the package" "packed $compiled kernels for $targets" "$OUT"
expect_not_contains "the recorded keys came out" "have another key now" "$ERR"
run install "$T/pkg/$targets.kdb" --prefix "$T/installed"
expect_rc 0

probe served LD_PRELOAD="$layer" KCACHE_CUSTOM_CACHE_DIR="$T/served" \
  KCACHE_SYSTEM_DB_PATH="$T/installed/share/kcache/db"
((RC == 0)) || fail "the probe fails under the layer with the package: $ERR"
same_as base served
expect_not_contains "the served run says nothing of kcache" "kcache" "$ERR"
expect_eq "kernels served from the package" "$compiled" "$(count_of "$T/served" system_hits)"
expect_eq "kernels compiled with the package in place" 0 "$(count_of "$T/served" compiles)"
pass "recorded, packed for $targets, installed and served"
