#!/usr/bin/env bash
# CLBlast's own test programs on PoCL, timed four ways in one run
# (docs/benchmarks.md, "The OpenCL layer"):
#   none        no cache: PoCL's cache off (POCL_KERNEL_CACHE=0), no layer
#   pocl warm   PoCL's own kernel cache, filled by a run before
#   layer cold  the OpenCL layer with an empty kcache folder, PoCL's cache off
#   layer warm  the layer again, its folder filled by the cold run (whose
#               entries gained the work-group code the cold run's launches
#               compiled, docs/design.md §10.1)
#   both warm   the layer warm over PoCL's warm cache
# Each program's pass/fail/skip counts must be the same in all five.
# Usage: bench/layers/clblast_layer.sh LAYER.so [ROUTINE...] (default: xgemm)
#   e.g. bench/layers/clblast_layer.sh build-release/src/libkcache_opencl_layer.so xgemm xaxpy
set -euo pipefail
layer="$(realpath "${1:?usage: clblast_layer.sh LAYER.so [ROUTINE...]}")"
shift
routines=("$@")
((${#routines[@]})) || routines=(xgemm)
work="$(mktemp -d "${TMPDIR:-/tmp}/kcache-bench-clblast.XXXXXX")"
trap 'rm -rf "$work"' EXIT
for var in $(compgen -e); do [[ "$var" == KCACHE_* ]] && unset "$var"; done
export KCACHE_CUSTOM_CACHE_DIR="$work/kcache" KCACHE_SYSTEM_DB_PATH="$work/sys"
mkdir -p "$work/sys"

counts() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /test\(s\) passed/ {p += $1} /test\(s\) failed/ {f += $1} /test\(s\) skipped/ {s += $1}
    END {printf "%d/%d/%d", p, f, s}'
}

# timed LABEL ENV...: runs the program with ENV; prints seconds, keeps counts.
timed() {
  local label="$1"
  shift
  local start end
  start=$(date +%s%N)
  env "$@" "clblast_test_$routine" >"$work/$label.out" 2>&1
  end=$(date +%s%N)
  seconds[$label]=$(awk -v ns=$((end - start)) 'BEGIN {printf "%.3f", ns / 1e9}')
  passed[$label]=$(counts "$work/$label.out")
}

echo "| program | none (PoCL cache off) | PoCL cache warm | layer cold | layer warm | layer + PoCL warm | layer warm / PoCL warm | (layer + PoCL) / PoCL | passed/failed/skipped |"
echo "|---|---|---|---|---|---|---|---|---|"
for routine in "${routines[@]}"; do
  declare -A seconds=() passed=()
  rm -rf "$work/kcache" "$work/pocl-off" "$work/pocl-on"
  timed none POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$work/pocl-off"
  POCL_CACHE_DIR="$work/pocl-on" "clblast_test_$routine" >/dev/null 2>&1  # fills PoCL's cache
  timed pocl POCL_CACHE_DIR="$work/pocl-on"
  timed cold POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$work/pocl-off" LD_PRELOAD="$layer"
  timed warm POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$work/pocl-off" LD_PRELOAD="$layer"
  timed both POCL_CACHE_DIR="$work/pocl-on" LD_PRELOAD="$layer"
  for label in pocl cold warm both; do
    if [[ "${passed[$label]}" != "${passed[none]}" ]]; then
      echo "clblast_test_$routine: $label passed/failed/skipped ${passed[$label]}, without caching ${passed[none]}" >&2
      exit 1
    fi
  done
  printf '| clblast_test_%s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2fx | %.2fx | %s |\n' \
    "$routine" "${seconds[none]}" "${seconds[pocl]}" "${seconds[cold]}" "${seconds[warm]}" \
    "${seconds[both]}" "$(awk -v a="${seconds[warm]}" -v b="${seconds[pocl]}" 'BEGIN {print a / b}')" \
    "$(awk -v a="${seconds[both]}" -v b="${seconds[pocl]}" 'BEGIN {print a / b}')" "${passed[none]}"
done
