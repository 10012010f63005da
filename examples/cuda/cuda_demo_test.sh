#!/usr/bin/env bash
# CTest demo.cuda.quick / demo.cuda.compile: two --quick runs of the CUDA
# demo on one fresh cache. The first must compile every kernel, the second
# must take every kernel from the user tier, and every result must be right.
#
#   cuda_demo_test.sh gpu|compile-only PATH/TO/kcache_cuda_demo
#
# gpu           the kernels run on the GPU and are checked against the CPU
#               reference; exit 125 (skipped) without a GPU, driver or NVRTC.
# compile-only  no GPU: every kernel is compiled for sm_90 and its CUBIN
#               checked; exit 125 (skipped) without NVRTC.
# Without NVRTC both fail instead (exit 1) when KCACHE_REQUIRE_BACKENDS
# names nvrtc; a missing GPU or driver is a skip everywhere.
set -euo pipefail

mode=${1:?usage: cuda_demo_test.sh gpu|compile-only PATH/TO/kcache_cuda_demo}
demo=${2:?usage: cuda_demo_test.sh gpu|compile-only PATH/TO/kcache_cuda_demo}
case $mode in
  gpu) run_options=() ;;
  compile-only) run_options=(--compile-only --target sm_90) ;;
  *)
    echo "cuda_demo_test.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
# shellcheck source=SCRIPTDIR/../demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../demo_lib.sh"

demo_make_work_dir kcache-cuda-demo-test

# --list-devices exits 0 only when the GPU, its driver and NVRTC are all
# there, and prints "compiler: ..." when NVRTC is; its stderr says what is
# missing.
probe_status=0
"$demo" --list-devices >"$work_dir/probe.out" 2>"$work_dir/probe.err" || probe_status=$?
if [[ $mode == gpu && $probe_status -ne 0 ]]; then
  echo "SKIP: no GPU to run the CUDA demo on:"
  sed 's/^/  /' "$work_dir/probe.err"
  exit 125
fi
if ! grep -q '^compiler: ' "$work_dir/probe.out"; then
  demo_skip_backend nvrtc "no NVRTC to compile the CUDA demo's kernels:" \
    "$(sed 's/^/  /' "$work_dir/probe.err")"
fi

demo_use_only_cache "$work_dir/cache"
export KCACHE_LOG_LEVEL=error  # no "missing system database" warning
demo_test_cold_and_warm "$demo" --quick "${run_options[@]}"
if [[ $mode == gpu ]]; then
  echo "PASS: $kernels kernels compiled cold, all loaded from the user tier warm, all results right"
else
  echo "PASS: $kernels kernels compiled for sm_90 cold, all from the user tier warm, all CUBINs right"
fi
