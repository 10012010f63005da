#!/usr/bin/env bash
# Issue 11's workflow under a program never written for kcache (CuPy, its
# own cache in memory only): recorded under `kcache run` (KCACHE_RECORD),
# every recorded target packed with the NVRTC CuPy used (one job per
# core), installed; then fresh processes with a fresh user cache and the
# packages as the system tier, results checked against NumPy
# (cupy_shim.py), timed against NVRTC in each process.
# Usage: bench/layers/cupy_record_pack.sh KCACHE [RUNS]
set -uo pipefail
kcache="${1:?usage: cupy_record_pack.sh KCACHE [RUNS]}"
runs="${2:-3}"
script="$(dirname "$0")/cupy_shim.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
export CUPY_CACHE_IN_MEMORY=1

# seconds COMMAND...: runs it, its output in $work/last and last.err, its
# wall time in $took; a failure is said and fails the run.
seconds() {
  local start end
  start=$(date +%s%N)
  "$@" >"$work/last" 2>"$work/last.err" || {
    echo "FAILED: $* $(tail -n 5 "$work/last" "$work/last.err")" >&2
    status=1
  }
  end=$(date +%s%N)
  took="$(awk -v ns=$((end - start)) 'BEGIN {printf "%.2f", ns / 1e9}')"
}

median() { sort -n "$1" | awk '{w[NR]=$1} END {print w[int((NR+1)/2)]}'; }

seconds env KCACHE_CUSTOM_CACHE_DIR="$work/recording" KCACHE_RECORD="$work/m.jsonl" \
  KCACHE_LOG_LEVEL=info "$kcache" run -- python3 "$script"
echo "recording: $took s, $(wc -l <"$work/m.jsonl") kernels recorded"
real_lib="$(sed -n 's/.*compiles through \(.*\) are served.*/\1/p' "$work/last.err" | head -n 1)"
echo "CuPy's NVRTC: $real_lib"
targets="$(python3 -c '
import json, sys
print(" ".join(sorted({json.loads(l)["target"]["arch"] for l in open(sys.argv[1]) if l.strip()})))
' "$work/m.jsonl")"
for target in $targets; do
  seconds "$kcache" pack --manifest "$work/m.jsonl" --backend nvrtc --nvrtc-library "$real_lib" \
    --target "$target" --output "$work/pkg/$target.kdb"
  echo "pack $target: $took s"
  grep -E "^packed|^took" "$work/last"
  grep -E "another key|failed" "$work/last.err" && status=1
  "$kcache" install "$work/pkg/$target.kdb" --prefix "$work/installed" || status=1
done

for ((i = 0; i < runs; i++)); do
  seconds python3 "$script"
  echo "$took" >>"$work/nvrtc.times"
  # A fresh user cache: the process's first hit from a package makes its
  # folder, so that it counts there (design.md §8).
  rm -rf "$work/served"
  seconds env KCACHE_CUSTOM_CACHE_DIR="$work/served" \
    KCACHE_SYSTEM_DB_PATH="$work/installed/share/kcache/db" "$kcache" run -- python3 "$script"
  echo "$took" >>"$work/served.times"
done
echo
echo "| CuPy in memory, fresh process each (median of $runs, taking turns) | process s |"
echo "|---|---|"
echo "| NVRTC each process | $(median "$work/nvrtc.times") |"
echo "| kcache run, a fresh user cache, the packages installed | $(median "$work/served.times") |"
echo
echo "the last served process, kcache stats:"
KCACHE_CUSTOM_CACHE_DIR="$work/served" "$kcache" stats --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["counts"]
print({k: c[k] for k in ("requests", "system_hits", "user_hits", "compiles", "uncacheable")})
sys.exit(0 if c["system_hits"] > 0 and c["compiles"] == 0 else 1)' || status=1
exit "$status"
