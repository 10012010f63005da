#!/usr/bin/env bash
# CuPy under the NVRTC shim on a GPU machine (issue 13): every row is a
# fresh process of bench/layers/cupy_shim.py (results checked against
# NumPy), its whole wall time beside the time from the first compile to
# the last result. Rows: CuPy's own disk cache cold and warm; CuPy in
# memory only (CUPY_CACHE_IN_MEMORY=1: every process compiles with NVRTC,
# the driver's cache has nothing to do for CUBIN); the same under
# `kcache run`, cold then warm.
# Usage: bench/layers/run_cupy_shim.sh KCACHE [RUNS]
set -uo pipefail
kcache="${1:?usage: run_cupy_shim.sh KCACHE [RUNS]}"
runs="${2:-3}"
script="$(dirname "$0")/cupy_shim.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

one() {  # one [ENV...] -- [PREFIX...]: "wall_s ready_s"
  local start end line
  start=$(date +%s%N)
  line="$("$@" python3 "$script" 2>"$work/err")" || {
    echo "FAILED: $line $(tail -n 5 "$work/err")" >&2
    status=1
  }
  end=$(date +%s%N)
  echo "$(((end - start) / 1000000)) $(awk '{print $4}' <<<"$line")"
}

row() {  # row LABEL RESET COMMAND...: RUNS fresh processes, the median
  local label="$1" reset="$2"
  shift 2
  for ((i = 0; i < runs; i++)); do
    eval "$reset"
    one "$@"
  done | sort -n | awk -v l="$label" '{w[NR]=$1; r[NR]=$2} END {m=int((NR+1)/2); printf "| %s | %.2f | %s |\n", l, w[m]/1000, r[m]}'
}

echo "| CuPy run (fresh process each) | process s | compile+run s |"
echo "|---|---|---|"
row "own disk cache, cold" 'rm -rf "$work/cupy"' env CUPY_CACHE_DIR="$work/cupy"
row "own disk cache, warm" ':' env CUPY_CACHE_DIR="$work/cupy"
row "in memory only (NVRTC each process)" ':' env CUPY_CACHE_IN_MEMORY=1
row "in memory, kcache run, cold" 'rm -rf "$work/kc"' env CUPY_CACHE_IN_MEMORY=1 \
  KCACHE_CUSTOM_CACHE_DIR="$work/kc" "$kcache" run --
env CUPY_CACHE_IN_MEMORY=1 KCACHE_CUSTOM_CACHE_DIR="$work/kc" "$kcache" run -- python3 "$script" >/dev/null
row "in memory, kcache run, warm" ':' env CUPY_CACHE_IN_MEMORY=1 \
  KCACHE_CUSTOM_CACHE_DIR="$work/kc" "$kcache" run --
echo
echo "kcache stats of the kcache runs:"
KCACHE_CUSTOM_CACHE_DIR="$work/kc" "$kcache" stats | head -7
CUPY_CACHE_IN_MEMORY=1 KCACHE_CUSTOM_CACHE_DIR="$work/kc" KCACHE_LOG_LEVEL=info "$kcache" run -- \
  python3 "$script" 2>&1 | grep -E "shim active|kernels" || status=1
exit "$status"
