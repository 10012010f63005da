#!/usr/bin/env bash
# CuPy under the NVRTC shim on the GPU machine (issue 13), in one call:
#   run(command="bash scripts/device/run_cupy_shim.sh", carry=["build-device"])
# build-device holds a Release build of kcache, kcache_tool, the stand-in
# (src/kcache/nvrtc/libnvrtc.so.13) and the OpenCL layer, with the
# libraries they need in deps/ (see pack.sh for how deps/ is gathered).
set -uo pipefail
# The stand-in is preloaded into Python: it needs libkcache and its
# libraries there too, so every row (CuPy's own too) runs with them.
source "$(dirname "$0")/device_env.sh"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  python3 -c 'import cupy; print("cupy", cupy.__version__); from cupy.cuda import nvrtc; print("nvrtc", nvrtc.getVersion())' || true
  ldd "$b/src/kcache/nvrtc/libnvrtc.so.13" | grep -i "not found"
  "$b/tools/kcache/kcache" run --print-env
  # Which libnvrtc CuPy loads, and by what name.
  CUPY_CACHE_IN_MEMORY=1 LD_DEBUG=libs python3 -c 'import cupy; cupy.RawModule(code="extern \"C\" __global__ void k(){}").get_function("k")' 2>&1 |
    grep -E "nvrtc" | grep -E "calling init|find library" | head -5
  bash bench/layers/run_cupy_shim.sh "$b/tools/kcache/kcache" "${RUNS:-3}"
} 2>&1 | tee "$out/cupy_shim.log"
exit "${PIPESTATUS[0]}"
