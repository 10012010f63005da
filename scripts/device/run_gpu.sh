#!/usr/bin/env bash
# The GPU pass, in one call on the device machine (see pack.sh): the GPU
# tests for real, the CUDA demo cold then warm, and the kernel-ready
# benchmark against the load floor, the CUDA driver's JIT cache and CuPy;
# then the CPU scaling of plain processes and `kcache pack` of 500 NVRTC
# kernels with --jobs 1 against --jobs 8 and 16 (issue 11; about 2 minutes).
# Everything it prints also lands in $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
b=$PWD/build-device
# Only kcache's own programs get the carried libraries: Python (CuPy) must
# keep the machine's.
libs=$b/src:$b/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
kc() { LD_LIBRARY_PATH=$libs "$@"; }
export KCACHE_LOG_LEVEL=${KCACHE_LOG_LEVEL:-warning}
status=0
step() { echo; echo "=== $* ==="; }

{
  step machine
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  # The cores pack --jobs has (issue 11): threads per core, sockets, and
  # what N processes of plain CPU work get from them.
  lscpu | tee "$out/lscpu.txt" || true
  kc ldd "$b/tools/kcache/kcache" | grep -i "not found" && status=1
  python3 -c 'import cupy; print("cupy", cupy.__version__)' || true

  step "GPU tests (the CUDA loader, NVRTC)"
  kc "$b/tests/kcache_cuda_tests" || status=1
  kc "$b/tests/kcache_compiler_tests" --gtest_filter='Nvrtc*:CompilerIdentity*:*/nvrtc_*' || status=1

  if [ -x "$b/examples/cuda/kcache_cuda_demo" ]; then
    step "CUDA demo: cold, then warm"
    KCACHE_CUDA_DEMO=$b/examples/cuda/kcache_cuda_demo kc bash examples/cuda/run_cuda_demo.sh || status=1
  fi

  step "process ready with NVRTC (open, compiler, first hit), and hits with includes"
  kc "$b/bench/process_ready" --processes=30 | tee "$out/process_ready.md" || status=1
  kc "$b/bench/include_hit" --rounds=4000 | tee "$out/include_hit.md" || status=1

  step "kernel-ready benchmark"
  # build-device/baseline/, when there: another build's libkcache.so (see
  # pack.sh's BASELINE), whose paired runs take turns with this build's.
  baseline=()
  if compgen -G "$b/baseline/libkcache.so*" >/dev/null; then
    baseline=(--baseline-lib-path "$b/baseline:$b/deps")
  fi
  python3 bench/cuda/run_load_bench.py --bench "$b/bench/cuda_load_bench" --lib-path "$libs" \
    --work /tmp/kcache-load-bench --repeats "${REPEATS:-3}" --out "$out/load_bench.md" \
    "${baseline[@]}" || status=1

  # Last, so that its 16 compiling threads disturb no measurement above.
  # Its repeats are its own (PACK_REPEATS): a --jobs 1 run is ~40 s of
  # compiles. --processes adds 16 `pack --jobs 1` on split manifests: what
  # the cores give when no process is shared.
  step "CPU scaling of plain processes, the ceiling for pack --jobs (issue 11)"
  python3 bench/cpu_scaling.py --processes "${PACK_JOBS:-1,8,16}" | tee "$out/cpu_scaling.md" ||
    status=1
  step "pack: 500 NVRTC kernels for sm_90, --jobs 1 against --jobs 8 and 16 (issue 11)"
  timeout 240 python3 bench/pack_jobs.py --kcache "$b/tools/kcache/kcache" --lib-path "$libs" \
    --backend nvrtc --target sm_90 --kernels 500 --jobs "${PACK_JOBS:-1,8,16}" \
    --repeat "${PACK_REPEATS:-2}" --processes --work /tmp/kcache-pack-jobs |
    tee "$out/pack_jobs.md" || status=1
  exit "$status"
} 2>&1 | tee "$out/gpu_run.log"
exit "${PIPESTATUS[0]}"
