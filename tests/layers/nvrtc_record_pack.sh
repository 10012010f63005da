#!/usr/bin/env bash
# Issue 11's workflow for a program that knows nothing of kcache (the NVRTC
# probe, tests/layers/nvrtc/nvrtc_probe.cpp): run under the shim with
# KCACHE_RECORD, packed for each target it asked for with the NVRTC it
# used, installed; a fresh user cache then serves every kernel it can
# compile from the packages, none compiled, no warning printed, and the
# program sees what it sees without kcache (binaries, lowered names, the
# compile logs). Run for each soname whose real library is here, as
# nvrtc_shim.sh.
# Environment (CTest): KCACHE, NVRTC_SHIM_DIR, NVRTC_PROBE;
# KCACHE_TEST_NVRTC_PATH (optional): more folders of real libnvrtc.
shim_dir="${NVRTC_SHIM_DIR:?NVRTC_SHIM_DIR must name the folder of the stand-ins}"
probe="${NVRTC_PROBE:?NVRTC_PROBE must name the probe program}"
sanitize="${KCACHE_SANITIZE:-}"
extra_path="${KCACHE_TEST_NVRTC_PATH:-}"  # read before fresh_env drops KCACHE_*
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build

probe_setup "$sanitize"
search_path="$extra_path"
[[ -d /usr/local/cuda/lib64 ]] && search_path="/usr/local/cuda/lib64${search_path:+:$search_path}"

# probe NAME [ENV...]: the probe for $soname with ENV, its stdout in
# $T/NAME.out.
probe() {
  run_probe "$1" env ${search_path:+LD_LIBRARY_PATH="$search_path"} "${@:2}" "$probe" "$soname" "$T/inc"
}

tested=()
for soname in libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so.11.2; do
  shim="$shim_dir/$soname"
  [[ -f "$shim" ]] || fail "the stand-in $shim was not built"
  probe "$soname.base"
  if ((RC == 125)); then
    echo "note: no real $soname here: $OUT"
    continue
  fi
  ((RC == 0)) || fail "the probe fails without the shim: $OUT"

  # Recorded: what the program asked for, with the NVRTC it loaded.
  probe "$soname.recorded" LD_PRELOAD="$shim" KCACHE_CUSTOM_CACHE_DIR="$T/recording-$soname" \
    KCACHE_RECORD="$T/$soname.jsonl" KCACHE_LOG_LEVEL=info
  ((RC == 0)) || fail "the probe fails under the shim while recording: $ERR"
  same_as "$soname.base" "$soname.recorded"
  real_lib="$(sed -n 's/.*compiles through \(.*\) are served.*/\1/p' "$T/$soname.recorded.err" | head -n 1)"
  [[ -f "$real_lib" ]] || fail "the recording run's info line names no real library: $ERR"
  compiled="$(count_of "$T/recording-$soname" compiles)"
  ((compiled > 0)) || fail "the recording run compiled nothing through kcache"
  [[ -s "$T/$soname.jsonl" ]] || fail "KCACHE_RECORD wrote no manifest"
  recorded_targets="$(python3 -c '
import json, sys
print(" ".join(sorted({json.loads(l)["target"]["arch"] for l in open(sys.argv[1]) if l.strip()})))
' "$T/$soname.jsonl")" || fail "the manifest does not parse"
  expect_eq "the targets the program asked for" "compute_80 sm_80" "$recorded_targets"

  expect_contains "the manifest names the NVRTC the program used" \
    "\"library\":\"$(readlink -f "$real_lib")\"" "$(cat "$T/$soname.jsonl")"

  # Packed for each, with no --nvrtc-library: the NVRTC the manifest names,
  # not the one pack would find (an NVRTC unpacked outside the loader's
  # folders finds its builtins only on the loader's path); installed.
  for target in $recorded_targets; do
    LD_LIBRARY_PATH="$search_path" run pack --manifest "$T/$soname.jsonl" --backend nvrtc \
      --target "$target" --output "$T/pkg-$soname/$target.kdb" --jobs 2
    expect_rc 1  # the probe's own compile errors, which no package holds
    expect_contains "pack wrote the package" "packed " "$OUT"
    expect_not_contains "the recorded keys came out" "have another key now" "$ERR"
    run install "$T/pkg-$soname/$target.kdb" --prefix "$T/installed-$soname"
    expect_rc 0
  done

  # Served: a fresh user cache, the packages the system tier.
  probe "$soname.served" LD_PRELOAD="$shim" KCACHE_CUSTOM_CACHE_DIR="$T/served-$soname" \
    KCACHE_SYSTEM_DB_PATH="$T/installed-$soname/share/kcache/db"
  ((RC == 0)) || fail "the probe fails under the shim with the packages: $ERR"
  same_as "$soname.base" "$soname.served"
  [[ -z "$ERR" ]] || fail "the served run printed (a missing package's warning?): $ERR"
  expect_eq "kernels served from the packages" "$compiled" \
    "$(count_of "$T/served-$soname" system_hits)"
  expect_eq "kernels compiled with the packages in place" 0 \
    "$(count_of "$T/served-$soname" compiles)"
  tested+=("$soname")
done

((${#tested[@]} > 0)) || skip_backend nvrtc "no real libnvrtc.so.13, .12 or .11.2 here"
pass "recorded, packed, installed and served: ${tested[*]}"
