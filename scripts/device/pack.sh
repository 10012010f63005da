#!/usr/bin/env bash
# Builds what the GPU machine runs and gathers it in build-device/ (ignored
# by git): the device machine has CUDA, CMake and Python but not kcache's
# Debian dependencies, so binaries built here travel with the libraries they
# need (deps/). Then, from the device tool:
#   run(command="bash scripts/device/run_gpu.sh", carry=["build-device"])
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCACHE_BUILD_TESTS=ON \
  -DKCACHE_BUILD_BENCHMARKS=ON -DKCACHE_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-device -j2 --target kcache kcache_cuda kcache_tool kcache_cuda_tests \
  kcache_compiler_tests kcache_core_tests cuda_load_bench hit_latency include_hit process_ready \
  kcache_nvrtc_shim_13 kcache_dlsym_layer kcache_opencl_layer $(
  cmake --build build-device --target help | grep -o 'kcache_cuda_demo' | head -1)
rm -rf build-device/deps && mkdir -p build-device/deps
# Every non-system library the binaries link, resolved here.
for bin in build-device/tools/kcache/kcache build-device/src/libkcache.so \
  build-device/tests/kcache_core_tests; do
  ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|ld-linux)[.-]' |
  while read -r lib; do cp -L "$lib" build-device/deps/; done
# BASELINE=<commit>: that commit's libkcache.so too, in build-device/baseline/
# (run_gpu.sh then runs the paired estimate with both, taking turns).
rm -rf build-device/baseline
if [[ -n "${BASELINE:-}" ]]; then
  rm -rf build-baseline-src
  git worktree add --force --detach build-baseline-src "$BASELINE" >/dev/null
  cmake -S build-baseline-src -B build-baseline -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKCACHE_BUILD_TESTS=OFF -DKCACHE_BUILD_BENCHMARKS=OFF -DKCACHE_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build-baseline -j2 --target kcache
  mkdir -p build-device/baseline
  cp -P build-baseline/src/libkcache.so* build-device/baseline/
  git worktree remove --force build-baseline-src
fi
du -sh build-device/deps
echo "pack: build-device is ready to carry"
