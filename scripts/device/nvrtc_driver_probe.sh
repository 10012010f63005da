#!/usr/bin/env bash
# What NVRTC does with the GPU driver while it compiles (issue 11): does a
# cubin depend on a visible GPU, and what does hiding the GPUs save a pack?
# From the device tool, build-device carried:
#   run(command="bash scripts/device/nvrtc_driver_probe.sh", carry=["build-device"])
set -euo pipefail
source "$(dirname "$0")/device_env.sh"
K=$b/tools/kcache/kcache
export KCACHE_LOG_LEVEL=error
w=$(mktemp -d)
"$b/bench/cuda_load_bench" gen --dir "$w/D" --small 12 --big 2 >/dev/null
# 1. The same kernels compiled with the GPU visible and hidden: the same
#    keys, the same bytes.
for way in visible hidden; do
  hide=()
  [[ $way == hidden ]] && hide=(env CUDA_VISIBLE_DEVICES=)
  for f in "$w"/D/src/*.cu; do
    n=$(basename "$f" .cu)
    "${hide[@]}" env KCACHE_CUSTOM_CACHE_DIR="$w/c-$way" CUDA_CACHE_DISABLE=1 "$K" compile \
      --backend nvrtc --source "$f" --kernel "$(head -1 "$w/D/src/$n.names")" --target sm_90 \
      --output "$w/$way-$n.cubin" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])' >"$w/$way-$n.key"
  done
done
same=0
for f in "$w"/visible-*; do
  cmp "$f" "${f/visible-/hidden-}"
  same=$((same + 1))
done
echo "probe: $same files (cubins and keys) identical with the GPU visible and hidden"
# 2. One compile process, each way, alone (5 each, taking turns).
for _ in 1 2 3 4 5; do
  for way in visible hidden; do
    hide=()
    [[ $way == hidden ]] && hide=(env CUDA_VISIBLE_DEVICES=)
    rm -rf "$w/t"
    s=$(date +%s.%N)
    "${hide[@]}" env KCACHE_CUSTOM_CACHE_DIR="$w/t" CUDA_CACHE_DISABLE=1 "$K" compile --backend nvrtc \
      --source "$w/D/src/small_00.cu" --kernel "$(head -1 "$w/D/src/small_00.names")" --target sm_90 \
      --output "$w/x.cubin" >/dev/null
    echo "probe: one compile process, GPU $way: $(python3 -c "import time; print(round(1000*(time.time()-$s)))") ms"
  done
done
if command -v strace >/dev/null; then
  rm -rf "$w/t"
  KCACHE_CUSTOM_CACHE_DIR="$w/t" CUDA_CACHE_DISABLE=1 strace -f -c -o "$out/strace_visible.txt" "$K" compile \
    --backend nvrtc --source "$w/D/src/small_00.cu" --kernel "$(head -1 "$w/D/src/small_00.names")" \
    --target sm_90 --output "$w/x.cubin" >/dev/null
  rm -rf "$w/t"
  KCACHE_CUSTOM_CACHE_DIR="$w/t" CUDA_CACHE_DISABLE=1 strace -f -e trace=openat -o "$out/strace_open.txt" "$K" compile \
    --backend nvrtc --source "$w/D/src/small_00.cu" --kernel "$(head -1 "$w/D/src/small_00.names")" \
    --target sm_90 --output "$w/x.cubin" >/dev/null
  grep -E "nvidia|libcuda" "$out/strace_open.txt" | grep -v ENOENT | head -20 || true
else
  echo "probe: no strace here"
fi
rm -rf "$w"
