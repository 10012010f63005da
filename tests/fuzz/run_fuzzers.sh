#!/usr/bin/env bash
# Runs every libFuzzer target for N seconds (default 30) on a copy of its
# seed corpus, one after the other, and fails on any crash, leak, timeout,
# sanitizer report or violated invariant. Builds the `fuzz` preset first
# (configuring it when build-fuzz/ does not exist). docs/fuzzing.md says
# how to reproduce a failure and keep its input as a regression seed.
#
# Usage: tests/fuzz/run_fuzzers.sh [seconds-per-target [target...]]
# Each target's libFuzzer log is kept in build-fuzz/fuzz-logs/<target>.log,
# failing inputs in build-fuzz/fuzz-artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-30}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [seconds-per-target [target...]]" >&2
  exit 2
fi
build=build-fuzz
targets=(fuzz_entry_decoder fuzz_kdb_open fuzz_user_log fuzz_config fuzz_key_material
  fuzz_include_graph)
if [ $# -gt 1 ]; then targets=("${@:2}"); fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset fuzz >/dev/null
fi
cmake --build --preset fuzz >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/kcache-fuzz-XXXXXX")
# The targets write scratch files for every input: on tmpfs when there is
# one. Removed here too, since a target that crashes cannot clean up.
scratch=$work/scratch
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=$(mktemp -d /dev/shm/kcache-fuzz-XXXXXX); fi
mkdir -p "$scratch"
trap 'rm -rf "$work" "$scratch"' EXIT

failed=0
printf '%-20s %8s %12s %9s %6s %7s  %s\n' target seconds executions exec/s cov ft result
for target in "${targets[@]}"; do
  corpus=$work/$target/corpus
  artifacts=$work/$target/artifacts
  log=$work/$target/log
  mkdir -p "$corpus" "$artifacts"
  cp tests/fuzz/corpus/"$target"/* "$corpus"/
  options=()
  if [ -f "tests/fuzz/$target.dict" ]; then options+=("-dict=tests/fuzz/$target.dict"); fi
  status=0
  TMPDIR=$scratch "$build/tests/fuzz/$target" "${options[@]}" -max_total_time="$seconds" \
    -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" >"$log" 2>&1 || status=$?

  mkdir -p "$build/fuzz-logs"
  cp "$log" "$build/fuzz-logs/$target.log"
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  result=ok
  if [ "$status" -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    result="FAILED (exit $status)"
    failed=1
  fi
  printf '%-20s %8s %12s %9s %6s %7s  %s\n' "$target" "$seconds" "${executions:-?}" \
    "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result"
  if [ "$result" != ok ]; then
    kept=$build/fuzz-artifacts/$target
    mkdir -p "$kept"
    cp "$artifacts"/* "$kept"/ 2>/dev/null || true
    echo "---- $target: last lines of its log; failing inputs kept in $kept/" >&2
    tail -n 40 "$log" >&2
    echo "---- reproduce: $build/tests/fuzz/$target $kept/<input>" >&2
  fi
done
exit "$failed"
