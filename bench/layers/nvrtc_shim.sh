#!/usr/bin/env bash
# Whole-process time of a CuPy-like NVRTC JIT (bench/layers/nvrtc_jit.cpp)
# without kcache, under the NVRTC shim cold (an empty cache) and warm, each
# RUNS times (the median printed), with the digest of what the compiles
# gave: it must be the same in every row.
# Usage: bench/layers/nvrtc_shim.sh BUILD_DIR [SONAME] [ARCH] [KERNELS] [RUNS]
set -euo pipefail
build="${1:?usage: nvrtc_shim.sh BUILD_DIR [SONAME] [ARCH] [KERNELS] [RUNS]}"
soname="${2:-libnvrtc.so.13}"
arch="${3:-sm_90}"
kernels="${4:-40}"
runs="${5:-5}"
jit="$build/bench/nvrtc_jit"
shim="$build/src/kcache/nvrtc/$soname"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# one LABEL [ENV...]: runs the JIT once, prints "wall_ms <its line>".
one() {
  local start end line
  start=$(date +%s%N)
  line="$(env "$@" "$jit" "$soname" "$arch" "$kernels")"
  end=$(date +%s%N)
  echo "$(((end - start) / 1000000)) $line"
}

median() { sort -n | awk '{a[NR]=$0} END {print a[int((NR + 1) / 2)]}'; }

row() {  # row LABEL [ENV...]: RUNS runs (cold: a fresh cache each), median
  local label="$1" cold=0
  shift
  [[ "$label" == *cold* ]] && cold=1
  for ((i = 0; i < runs; i++)); do
    ((cold)) && rm -rf "$work/cache"
    one "$@"
  done | median | awk -v l="$label" '{printf "| %s | %d | %s | %s | %s | %s |\n", l, $1, $5, $7, $9, $11}'
}

echo "| run | process ms | dlopen ms | compiles ms | per kernel ms | digest |"
echo "|---|---|---|---|---|---|"
row "NVRTC, no kcache"
row "shim, cold" KCACHE_CUSTOM_CACHE_DIR="$work/cache" LD_PRELOAD="$shim"
one KCACHE_CUSTOM_CACHE_DIR="$work/cache" LD_PRELOAD="$shim" >/dev/null  # fill it
row "shim, warm" KCACHE_CUSTOM_CACHE_DIR="$work/cache" LD_PRELOAD="$shim"
row "shim off (KCACHE_LAYER_DISABLE=1)" KCACHE_LAYER_DISABLE=1 LD_PRELOAD="$shim"
