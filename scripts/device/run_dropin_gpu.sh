#!/usr/bin/env bash
# The drop-in layers on the GPU machine (issue 41), in one call after
# pack.sh:
#   run(command="bash scripts/device/run_dropin_gpu.sh", carry=["build-device"])
# The GPU tests, then programs that never heard of kcache under `kcache
# run`, each cold then warm in a fresh cache: a ctypes program that opens
# the toolkit's NVRTC by its full path (as cuda-python's loader does), CuPy
# compiling a RawKernel and running it, and PyTorch with Triton importing
# and running a kernel (nothing of theirs may break under the layers).
# `kcache stats` after each says whether kcache served it.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
k=$b/tools/kcache/kcache
status=0
step() { echo; echo "=== $* ==="; }
fresh() {
  export KCACHE_CUSTOM_CACHE_DIR=/tmp/kcache-dropin-$1
  rm -rf "$KCACHE_CUSTOM_CACHE_DIR"
}
counts() { "$k" stats | grep -E "requests|hits|compiles"; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  step "GPU tests (the CUDA loader, NVRTC)"
  "$b/tests/kcache_cuda_tests" || status=1
  "$b/tests/kcache_compiler_tests" --gtest_filter='Nvrtc*:CompilerIdentity*:*/nvrtc_*' || status=1

  nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* 2>/dev/null | head -1)
  step "ctypes, NVRTC opened by its full path: $nvrtc"
  cat >/tmp/nv.py <<'PY'
import ctypes, sys
L = ctypes.CDLL(sys.argv[1]); prog = ctypes.c_void_p()
L.nvrtcCreateProgram(ctypes.byref(prog), b'extern "C" __global__ void k(float* p){p[0]=2.0f;}', b"k.cu", 0, None, None)
r = L.nvrtcCompileProgram(prog, 1, (ctypes.c_char_p * 1)(b"-arch=sm_90"))
size = ctypes.c_size_t(); L.nvrtcGetCUBINSize(prog, ctypes.byref(size))
print("compile", r, "cubin bytes", size.value)
PY
  fresh ctypes
  for run in cold warm; do
    echo "-- $run"; "$k" run -- python3 /tmp/nv.py "$nvrtc" || status=1; counts
  done

  step "CuPy RawKernel under kcache run"
  cat >/tmp/cp.py <<'PY'
import cupy as cp
src = r'''extern "C" __global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }'''
k = cp.RawKernel(src, "twice")
x = cp.arange(1024, dtype=cp.float32); k((4,), (256,), (x, cp.int32(1024)))
assert float(x[3]) == 6.0, x[3]
print("cupy", cp.__version__, "ok")
PY
  fresh cupy
  for run in cold warm; do
    echo "-- $run"; CUPY_CACHE_IN_MEMORY=1 "$k" run -- python3 /tmp/cp.py || status=1; counts
  done

  step "PyTorch and Triton under kcache run (nothing of theirs may break)"
  cat >/tmp/tt.py <<'PY'
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B); m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
x = torch.rand(4096, device="cuda"); y = torch.rand(4096, device="cuda"); o = torch.empty_like(x)
add[(4,)](x, y, o, 4096, B=1024)
assert torch.allclose(o, x + y)
print("torch", torch.__version__, "triton", triton.__version__, "ok")
PY
  fresh torch
  TRITON_CACHE_DIR=/tmp/triton-dropin "$k" run -- python3 /tmp/tt.py || status=1
  counts
  echo; echo "status $status"
  exit "$status"
} 2>&1 | tee "$out/dropin_gpu.log"
exit "${PIPESTATUS[0]}"
