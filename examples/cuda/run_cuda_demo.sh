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
demo=${KCACHE_CUDA_DEMO:-$repo_root/build/examples/cuda/kcache_cuda_demo}
if [[ ! -x $demo ]]; then
  echo "run_cuda_demo.sh: no demo binary at $demo" >&2
  echo "  build it: cmake -S $repo_root -B $repo_root/build -G Ninja && ninja -C $repo_root/build kcache_cuda_demo" >&2
  echo "  or point KCACHE_CUDA_DEMO at it" >&2
  exit 1
fi

cache_dir=
if [[ $# -gt 0 && $1 != -- ]]; then
  cache_dir=$1
  shift
fi
[[ ${1:-} == -- ]] && shift
demo_options=("$@")
compile_only=false
for option in "${demo_options[@]}"; do
  [[ $option == --compile-only ]] && compile_only=true
done

work_dir=$(mktemp -d "${TMPDIR:-/tmp}/kcache-cuda-demo.XXXXXX")
cleanup() { rm -rf "$work_dir"; }
trap cleanup EXIT

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

if [[ -z $cache_dir ]]; then
  cache_dir=$work_dir/cache
elif [[ -d $cache_dir && -n $(ls -A "$cache_dir") ]]; then
  echo "run_cuda_demo.sh: note: $cache_dir is not empty; the first run may not be cold" >&2
fi

# Only this cache: no installed system database, no run-time switch-off.
export KCACHE_CUSTOM_CACHE_DIR=$cache_dir
export KCACHE_SYSTEM_DB_PATH=$work_dir/no-system-db
unset KCACHE_DISABLE_CACHE

echo "(kcache warns once per run that no system database is installed for this"
echo " device: expected, the demo uses only its own user cache)"
echo
echo "=== run 1: cold (empty cache: every kernel is compiled) ==="
if ! "$demo" "${demo_options[@]}" --report "$work_dir/cold.txt"; then
  echo "run_cuda_demo.sh: the cold run failed" >&2
  exit 1
fi
echo
echo "=== run 2: warm (same cache: every kernel is loaded) ==="
if ! "$demo" "${demo_options[@]}" --report "$work_dir/warm.txt" --baseline "$work_dir/cold.txt"; then
  echo "run_cuda_demo.sh: the warm run failed" >&2
  exit 1
fi
