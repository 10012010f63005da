#!/usr/bin/env bash
# What NVRTC does with the GPU driver while it compiles (issue 11): does a
# cubin depend on the driver, and what does keeping NVRTC 13 away from it
# save a pack? Four ways: the GPU visible; hidden (CUDA_VISIBLE_DEVICES
# empty); hidden with cuInit's preloading of the driver's JIT libraries
# off; no driver at all (kcache's stand-in, libkcache-no-gpu-driver.so,
# preloaded: what pack loads, with the GPUs hidden, since 2026-12-06). From
# the device tool, build-device carried:
#   run(command="bash scripts/device/nvrtc_driver_probe.sh", carry=["build-device"])
set -euo pipefail
source "$(dirname "$0")/device_env.sh"
K=$b/tools/kcache/kcache
export KCACHE_LOG_LEVEL=error CUDA_CACHE_DISABLE=1
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$b/bench/cuda_load_bench" gen --dir "$w/D" --small 12 --big 2 >/dev/null
ways=(visible hidden hidden-no-preload no-driver)
stand_in=$b/tools/kcache/libkcache-no-gpu-driver.so
[[ -f $stand_in ]] || { echo "probe: no $stand_in; build kcache_tool" >&2; exit 1; }
# in_way WAY COMMAND...: runs COMMAND with the driver as WAY has it.
in_way() {
  local way=$1
  shift
  case $way in
  visible) "$@" ;;
  hidden) CUDA_VISIBLE_DEVICES= "$@" ;;
  hidden-no-preload) CUDA_VISIBLE_DEVICES= CUDA_FORCE_PRELOAD_LIBRARIES=0 "$@" ;;
  no-driver) LD_PRELOAD="$stand_in" "$@" ;;
  esac
}
# compile WAY CACHE NAME OUTPUT [--json]: one kcache process compiling
# kernel NAME of the generated ones for sm_90.
compile() {
  local way=$1 cache=$2 name=$3 output=$4
  shift 4
  in_way "$way" env KCACHE_CUSTOM_CACHE_DIR="$cache" "$K" compile --backend nvrtc \
    --source "$w/D/src/$name.cu" --kernel "$(head -1 "$w/D/src/$name.names")" --target sm_90 \
    --output "$output" "$@"
}
millis_since() { python3 -c "import time; print(round(1000 * (time.time() - $1)))"; }

# 1. The same kernels compiled each way: the same keys, the same bytes.
for way in "${ways[@]}"; do
  for f in "$w"/D/src/*.cu; do
    n=$(basename "$f" .cu)
    compile "$way" "$w/c-$way" "$n" "$w/$way-$n.cubin" --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])' >"$w/$way-$n.key"
  done
done
for way in "${ways[@]:1}"; do
  same=0
  for f in "$w"/visible-*; do
    cmp "$f" "${f/visible-/$way-}"
    same=$((same + 1))
  done
  echo "probe: $same files (cubins and keys) identical, GPU visible and $way"
done
# 2. One compile process alone, each way (5 each, taking turns; python's
#    start is in every figure).
for _ in 1 2 3 4 5; do
  for way in "${ways[@]}"; do
    rm -rf "$w/t"
    s=$(date +%s.%N)
    compile "$way" "$w/t" small_00 "$w/x.cubin" >/dev/null
    echo "probe: one compile process, $way: $(millis_since "$s") ms"
  done
done
# 3. Sixteen compile processes started at once, each way (3 each, taking
#    turns): a pack's start, where the driver's locks are queued for.
for _ in 1 2 3; do
  for way in "${ways[@]}"; do
    s=$(date +%s.%N)
    for i in $(seq 16); do
      rm -rf "$w/t$i"
      compile "$way" "$w/t$i" small_00 "$w/x$i.cubin" >/dev/null &
    done
    wait
    echo "probe: 16 compile processes at once, $way: $(millis_since "$s") ms"
  done
done
