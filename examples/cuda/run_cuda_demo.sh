#!/usr/bin/env bash
# The CUDA demo's main job: the kernel library run twice on the GPU against
# one fresh kcache cache. The first run compiles every kernel with NVRTC
# (cold), the second loads every kernel from the cache (warm); the second
# prints the total speed-up. Exit 125 when there is no GPU (or driver, or
# NVRTC) to run on, saying which.
#
#   examples/cuda/run_cuda_demo.sh [CACHE_DIR] [-- DEMO_OPTIONS...]
#
# CACHE_DIR: an empty or new folder to use as the cache (kept afterwards, so
# `kcache list` can show it); without it a temporary one is made and removed.
# DEMO_OPTIONS go to both runs, e.g. `-- --quick`; `-- --compile-only` runs
# the same comparison on NVRTC alone, without a GPU.
# The demo binary is $KCACHE_CUDA_DEMO, or build/examples/cuda/kcache_cuda_demo
# in the repo.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=SCRIPTDIR/../demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../demo_lib.sh"

demo=${KCACHE_CUDA_DEMO:-$repo_root/build/examples/cuda/kcache_cuda_demo}
demo_require_binary run_cuda_demo.sh "$demo" kcache_cuda_demo KCACHE_CUDA_DEMO "$repo_root"
demo_parse_arguments "$@"
compile_only=false
for option in "${demo_options[@]}"; do
  [[ $option == --compile-only ]] && compile_only=true
done
demo_make_work_dir kcache-cuda-demo

# --list-devices exits 0 only when the GPU, its driver and NVRTC are all
# there; it prints "compiler: ..." when NVRTC is, and says on stderr what is
# missing.
probe_status=0
"$demo" --list-devices >"$work_dir/probe.out" 2>"$work_dir/probe.err" || probe_status=$?
if [[ $compile_only == false && $probe_status -ne 0 ]]; then
  echo "run_cuda_demo.sh: cannot run the CUDA demo here:" >&2
  sed 's/^/  /' "$work_dir/probe.err" >&2
  echo "  (\`-- --compile-only\` compiles the kernels with NVRTC alone, without a GPU)" >&2
  exit 125
fi
if ! grep -q '^compiler: ' "$work_dir/probe.out"; then
  echo "run_cuda_demo.sh: no NVRTC to compile the kernels with:" >&2
  sed 's/^/  /' "$work_dir/probe.err" >&2
  exit 125
fi

demo_pick_cache_dir run_cuda_demo.sh
demo_use_only_cache "$cache_dir"
demo_run_cold_and_warm run_cuda_demo.sh "$demo" "${demo_options[@]}"
