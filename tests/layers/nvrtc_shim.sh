#!/usr/bin/env bash
# The NVRTC shim under a program that knows nothing of kcache (the probe,
# tests/layers/nvrtc/nvrtc_probe.cpp, which dlopens libnvrtc by soname as
# CuPy does): everything the program sees (results, CUBIN, PTX, logs,
# lowered names, the error cases) is what it sees without the shim, cold
# and warm; the warm run compiles nothing; an edited header is never
# served stale; KCACHE_LAYER_DISABLE=1 turns it off; `kcache run` puts it
# in place; a program that finds NVRTC through its own RUNPATH gets that
# NVRTC behind the stand-in. Run for each soname whose real library is here
# (CUDA 13 in /usr/local/cuda, Debian's NVRTC 11.8, NVRTC 12 in a folder of
# KCACHE_TEST_NVRTC_PATH).
# Environment (CTest): KCACHE, NVRTC_SHIM_DIR (the stand-ins' folder),
# NVRTC_PROBE, NVRTC_PROBE_RUNPATH; KCACHE_TEST_NVRTC_PATH (optional):
# folders, ':'-separated, that hold more real libnvrtc versions (CI unpacks
# NVRTC 12 there, scripts/install-ci-extras.sh); a soname found in none of
# the places above is not tested, but one such folder that holds no real
# libnvrtc at all fails the test.
shim_dir="${NVRTC_SHIM_DIR:?NVRTC_SHIM_DIR must name the folder of the stand-ins}"
probe="${NVRTC_PROBE:?NVRTC_PROBE must name the probe program}"
probe_runpath="${NVRTC_PROBE_RUNPATH:?NVRTC_PROBE_RUNPATH must name the probe whose RUNPATH is \$ORIGIN/nvrtc-lib}"
sanitize="${KCACHE_SANITIZE:-}"
extra_path="${KCACHE_TEST_NVRTC_PATH:-}"  # read before fresh_env drops KCACHE_*
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build

probe_setup "$sanitize"

# probe NAME [ENV...]: runs the probe for $soname with ENV, its stdout in
# $T/NAME.out.
probe() { run_probe "$1" env "${base_env[@]}" "${@:2}" "$probe" "$soname" "$T/inc" ${threads:-}; }

# The folders the probe's loader searches besides its own: the toolkit's,
# then the test's own real libraries.
search_path="$extra_path"
[[ -d /usr/local/cuda/lib64 ]] && search_path="/usr/local/cuda/lib64${search_path:+:$search_path}"
extra_dirs=()
[[ -n "$extra_path" ]] && IFS=: read -r -a extra_dirs <<<"$extra_path"
for dir in "${extra_dirs[@]}"; do
  compgen -G "$dir/libnvrtc.so.*" >/dev/null ||
    fail "KCACHE_TEST_NVRTC_PATH names $dir, which holds no libnvrtc.so.*"
done

tested=()
for soname in libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so.11.2; do
  shim="$shim_dir/$soname"
  [[ -f "$shim" ]] || fail "the stand-in $shim was not built"
  base_env=()
  [[ -n "$search_path" ]] && base_env+=(LD_LIBRARY_PATH="$search_path")
  threads=""
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache-$soname"
  echo '#define OFFSET 7' >"$T/inc/probe.h"

  probe "$soname.base"
  if ((RC == 125)); then
    echo "note: no real $soname here: $OUT"
    continue
  fi
  ((RC == 0)) || fail "the probe fails without the shim: $OUT"
  grep -q '^done$' "$T/$soname.base.out" || fail "the probe did not finish"
  grep -q '^cubin compile: rc 0' "$T/$soname.base.out" ||
    fail "the probe's main compile fails without the shim: $(head -n 30 "$T/$soname.base.out")"

  probe "$soname.cold" LD_PRELOAD="$shim" KCACHE_LOG_LEVEL=info
  ((RC == 0)) || fail "the probe fails under the shim (cold): $ERR"
  same_as "$soname.base" "$soname.cold"
  grep -q 'NVRTC shim active' <<<"$ERR" || fail "no line says the shim is active at info level: $ERR"
  ((compiles = $(stat_of compiles))) && ((compiles > 0)) ||
    fail "the cold run compiled nothing through kcache"
  requests_cold="$(stat_of requests)"

  probe "$soname.warm" LD_PRELOAD="$shim"
  ((RC == 0)) || fail "the probe fails under the shim (warm)"
  same_as "$soname.base" "$soname.warm"
  [[ -z "$ERR" ]] || fail "the shim printed on the program's stderr without being asked: $ERR"
  expect_eq "compiles after the warm run" "$compiles" "$(stat_of compiles)"
  hits="$(stat_of user_hits)"
  ((hits >= 6)) || fail "the warm run has $hits user-tier hits, not one per compile it can serve (6, the empty source too)"
  ((requests_cold < $(stat_of requests))) || fail "the warm run asked kcache nothing"

  # An edited header (through the options' -I) is never served stale.
  echo '#define OFFSET 9' >"$T/inc/probe.h"
  probe "$soname.base9"
  probe "$soname.edited" LD_PRELOAD="$shim"
  ((RC == 0)) || fail "the probe fails under the shim after the header changed"
  same_as "$soname.base9" "$soname.edited"
  if diff -q "$T/$soname.base.out" "$T/$soname.base9.out" >/dev/null; then
    fail "the header's change shows in no output: the test cannot tell a stale binary"
  fi

  # Threads of one process and processes at once on an empty folder.
  threads=4
  probe "$soname.threads_base"
  pids=()
  for i in 1 2 3; do
    (cd "$T" && env "${base_env[@]}" KCACHE_CUSTOM_CACHE_DIR="$T/many-$soname" LD_PRELOAD="$shim" \
      "$probe" "$soname" "$T/inc" 4) >"$T/$soname.many$i.out" 2>"$T/$soname.many$i.err" &
    pids+=($!)
  done
  for i in 1 2 3; do
    wait "${pids[$((i - 1))]}" ||
      fail "process $i of 3 under the shim failed: $(tail -n 5 "$T/$soname.many$i.err")"
    same_as "$soname.threads_base" "$soname.many$i"
  done
  threads=""

  # Off: the real calls only; kcache is asked nothing.
  before="$(stat_of requests)"
  probe "$soname.off" LD_PRELOAD="$shim" KCACHE_LAYER_DISABLE=1
  ((RC == 0)) || fail "the probe fails with KCACHE_LAYER_DISABLE=1"
  same_as "$soname.base9" "$soname.off"
  expect_eq "requests with KCACHE_LAYER_DISABLE=1" "$before" "$(stat_of requests)"

  # The cache off, or a cache folder that cannot be made: what the program
  # sees without the shim.
  probe "$soname.cache_off" LD_PRELOAD="$shim" KCACHE_DISABLE_CACHE=1
  ((RC == 0)) || fail "the probe fails under the shim with KCACHE_DISABLE_CACHE=1"
  same_as "$soname.base9" "$soname.cache_off"
  echo 'not a folder' >"$T/a-file"
  probe "$soname.bad_dir" LD_PRELOAD="$shim" KCACHE_CUSTOM_CACHE_DIR="$T/a-file/cache"
  ((RC == 0)) || fail "the probe fails under the shim when the cache folder cannot be made"
  same_as "$soname.base9" "$soname.bad_dir"

  # kcache run -- PROGRAM: the shim in place, nothing else changed.
  before="$(stat_of user_hits)"
  LAST_CMD="kcache run -- probe $soname"
  (cd "$T" && env "${base_env[@]}" "$KCACHE" run -- "$probe" "$soname" "$T/inc") \
    >"$T/$soname.run.out" 2>"$T/$soname.run.err"
  RC=$?
  ((RC == 0)) || fail "kcache run -- probe failed: $(tail -n 5 "$T/$soname.run.err")"
  same_as "$soname.base9" "$soname.run"
  (($(stat_of user_hits) > before)) || fail "kcache run: no hits, the shim was not in place"

  # A program that finds NVRTC through its own RUNPATH ($ORIGIN/nvrtc-lib,
  # as CuPy in a virtual environment finds pip's nvidia/cu13/lib), with no
  # LD_LIBRARY_PATH: the stand-in forwards to that NVRTC, not to the one
  # the loader's cache or the toolkit's folder holds.
  real_lib="$(sed -n 's/.*compiles through \(.*\) are served.*/\1/p' "$T/$soname.cold.err" | head -n 1)"
  [[ -f "$real_lib" ]] || fail "the cold run's info line names no real library: $(cat "$T/$soname.cold.err")"
  own="$T/own-$soname"
  mkdir -p "$own/nvrtc-lib"
  cp "$probe_runpath" "$own/probe"
  for file in "$(dirname "$(readlink -f "$real_lib")")"/libnvrtc*; do ln -s "$file" "$own/nvrtc-lib/"; done
  [[ -e "$own/nvrtc-lib/$soname" ]] || fail "no $soname beside $(readlink -f "$real_lib")"
  # What it sees without the shim is the baseline: a library that finds
  # its builtins only on the loader's path (Debian's NVRTC 12 unpacked
  # outside it) fails its compiles here, and must fail them alike under the
  # shim, so the shim's cache is a fresh one (a hit would serve what the
  # program cannot compile).
  LAST_CMD="probe $soname through its RUNPATH, without the shim"
  (cd "$T" && "$own/probe" "$soname" "$T/inc") >"$T/$soname.own_base.out" 2>"$T/$soname.own_base.err"
  RC=$?
  if ((RC == 125)) && [[ -n "$sanitize" ]]; then
    # A sanitizer's dlopen searches on behalf of its own runtime, not the
    # probe: the probe's RUNPATH is never looked at, and a library found
    # only there (NVRTC 12 here) is not found at all.
    echo "note: $soname through the probe's RUNPATH not tested under the sanitizer ($sanitize): $(head -n 2 "$T/$soname.own_base.out" "$T/$soname.own_base.err" | tr '\n' ' ')"
    tested+=("$soname")
    continue
  fi
  ((RC == 0)) || fail "the probe with its own NVRTC failed without the shim (rc $RC): $(tail -n 5 "$T/$soname.own_base.out" "$T/$soname.own_base.err")"
  LAST_CMD="probe $soname through its RUNPATH"
  (cd "$T" && env KCACHE_CUSTOM_CACHE_DIR="$T/own-cache-$soname" KCACHE_LOG_LEVEL=info \
    LD_PRELOAD="$shim" "$own/probe" "$soname" "$T/inc") >"$T/$soname.own.out" 2>"$T/$soname.own.err"
  RC=$?
  ((RC == 0)) || fail "the probe with its own NVRTC failed under the shim: $(tail -n 5 "$T/$soname.own.err")"
  same_as "$soname.own_base" "$soname.own"
  grep -q "compiles through $own/nvrtc-lib/$soname are served" "$T/$soname.own.err" ||
    fail "the stand-in forwarded to another NVRTC than the one the program finds: $(grep -h 'compiles through' "$T/$soname.own.err")"
  tested+=("$soname")
done

((${#tested[@]} > 0)) || skip_backend nvrtc "no real libnvrtc.so.13, .12 or .11.2 here"
for dir in "${extra_dirs[@]}"; do
  for lib in "$dir"/libnvrtc.so.*; do
    name="$(basename "$lib")"
    [[ -f "$shim_dir/$name" && " ${tested[*]} " != *" $name "* ]] &&
      fail "KCACHE_TEST_NVRTC_PATH holds $name, but its stand-in was not tested"
  done
done
echo "tested: ${tested[*]}"
pass
