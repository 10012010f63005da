#!/usr/bin/env bash
# The demo's main job: the kernel library run twice against one fresh kcache
# cache. The first run compiles every kernel (cold), the second loads every
# kernel from the cache (warm); the second prints the total speed-up.
#
#   examples/run_demo.sh [CACHE_DIR] [-- DEMO_OPTIONS...]
#
# CACHE_DIR: an empty or new folder to use as the cache (kept afterwards, so
# `kcache list` can show it); without it a temporary one is made and removed.
# DEMO_OPTIONS go to both runs, e.g. `-- --quick`.
# The demo binary is $KCACHE_DEMO, or build/examples/kcache_demo in the repo.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo=${KCACHE_DEMO:-$repo_root/build/examples/kcache_demo}
if [[ ! -x $demo ]]; then
  echo "run_demo.sh: no demo binary at $demo" >&2
  echo "  build it: cmake -S $repo_root -B $repo_root/build -G Ninja && ninja -C $repo_root/build kcache_demo" >&2
  echo "  or point KCACHE_DEMO at it" >&2
  exit 1
fi

cache_dir=
if [[ $# -gt 0 && $1 != -- ]]; then
  cache_dir=$1
  shift
fi
[[ ${1:-} == -- ]] && shift
demo_options=("$@")

work_dir=$(mktemp -d "${TMPDIR:-/tmp}/kcache-demo.XXXXXX")
cleanup() { rm -rf "$work_dir"; }
trap cleanup EXIT
if [[ -z $cache_dir ]]; then
  cache_dir=$work_dir/cache
elif [[ -d $cache_dir && -n $(ls -A "$cache_dir") ]]; then
  echo "run_demo.sh: note: $cache_dir is not empty; the first run may not be cold" >&2
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
  echo "run_demo.sh: the cold run failed" >&2
  exit 1
fi
echo
echo "=== run 2: warm (same cache: every kernel is loaded) ==="
if ! "$demo" "${demo_options[@]}" --report "$work_dir/warm.txt" --baseline "$work_dir/cold.txt"; then
  echo "run_demo.sh: the warm run failed" >&2
  exit 1
fi
