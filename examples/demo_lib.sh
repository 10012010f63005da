# shellcheck shell=bash
# Shell helpers of the demos' scripts: run_demo.sh and cuda/run_cuda_demo.sh,
# and the CTest scripts demo_test.sh and cuda/cuda_demo_test.sh. Sourced, not
# run, by scripts that `set -euo pipefail`.
#
# A demo binary takes --report FILE (key=value lines) and --baseline FILE.
# The scripts run it twice on one fresh cache, in $work_dir (made by
# demo_make_work_dir): the cold run writes $work_dir/cold.txt, the warm run
# $work_dir/warm.txt and compares itself with the cold one.

# demo_require_binary SCRIPT DEMO TARGET ENV_VAR REPO_ROOT
# Exits 1, saying how to build it, when DEMO is no executable.
demo_require_binary() {
  local script=$1 demo=$2 target=$3 env_var=$4 repo_root=$5
  if [[ ! -x $demo ]]; then
    echo "$script: no demo binary at $demo" >&2
    echo "  build it: cmake -S $repo_root -B $repo_root/build -G Ninja && ninja -C $repo_root/build $target" >&2
    echo "  or point $env_var at it" >&2
    exit 1
  fi
}

# demo_parse_arguments [CACHE_DIR] [-- DEMO_OPTIONS...]
# Sets cache_dir (empty when not given) and the array demo_options.
demo_parse_arguments() {
  cache_dir=
  if [[ $# -gt 0 && $1 != -- ]]; then
    cache_dir=$1
    shift
  fi
  [[ ${1:-} == -- ]] && shift
  # shellcheck disable=SC2034  # read by the script that sources this file
  demo_options=("$@")
}

# demo_make_work_dir NAME
# Sets work_dir to a new folder ${TMPDIR:-/tmp}/NAME.XXXXXX, removed at exit.
demo_make_work_dir() {
  work_dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  trap 'rm -rf "$work_dir"' EXIT
}

# demo_pick_cache_dir SCRIPT
# Keeps the cache_dir the user gave, with a note when it is not empty (the
# cold run may then load kernels), or sets it to a fresh one in $work_dir.
demo_pick_cache_dir() {
  local script=$1
  if [[ -z $cache_dir ]]; then
    cache_dir=$work_dir/cache
  elif [[ -d $cache_dir && -n $(ls -A "$cache_dir") ]]; then
    echo "$script: note: $cache_dir is not empty; the first run may not be cold" >&2
  fi
}

# demo_use_only_cache CACHE_DIR
# The demo's runs use this cache only: no installed system database, no
# run-time switch-off.
demo_use_only_cache() {
  export KCACHE_CUSTOM_CACHE_DIR=$1
  export KCACHE_SYSTEM_DB_PATH=$work_dir/no-system-db
  unset KCACHE_DISABLE_CACHE
}

# demo_run_cold_and_warm SCRIPT DEMO [DEMO_OPTIONS...]
# The demo's main job, each run under a heading; exits 1 when a run fails.
demo_run_cold_and_warm() {
  local script=$1 demo=$2
  shift 2
  echo "(kcache warns once per run that no system database is installed for this"
  echo " device: expected, the demo uses only its own user cache)"
  echo
  echo "=== run 1: cold (empty cache: every kernel is compiled) ==="
  if ! "$demo" "$@" --report "$work_dir/cold.txt"; then
    echo "$script: the cold run failed" >&2
    exit 1
  fi
  echo
  echo "=== run 2: warm (same cache: every kernel is loaded) ==="
  if ! "$demo" "$@" --report "$work_dir/warm.txt" --baseline "$work_dir/cold.txt"; then
    echo "$script: the warm run failed" >&2
    exit 1
  fi
}

# --- The CTest scripts.

# value FILE KEY: the value of KEY in a demo report.
value() { sed -n "s/^$2=//p" "$1"; }

fail() {
  echo "FAIL: $*"
  exit 1
}

# demo_skip_backend BACKEND REASON [DETAIL_LINE...]
# BACKEND cannot start: skips (exit 125), saying why, or fails (exit 1) when
# KCACHE_REQUIRE_BACKENDS (a comma list, "opencl,hip,nvrtc" in CI) names it.
# The same rule as skip_backend in tests/cli/lib.sh.
demo_skip_backend() {
  local backend=$1 reason=$2 required=${KCACHE_REQUIRE_BACKENDS:-} status=125
  shift 2
  if [[ ",${required// /}," == *",$backend,"* ]]; then
    echo "FAIL: backend $backend is required (KCACHE_REQUIRE_BACKENDS=$required) but cannot start: $reason"
    status=1
  else
    echo "SKIP: $reason"
  fi
  [[ $# -eq 0 ]] || printf '%s\n' "$@"
  exit $status
}

# demo_test_cold_and_warm DEMO [DEMO_OPTIONS...]
# Runs the demo cold and warm and fails unless both ran at least 8 kernels,
# all of them right, the cold run compiled every kernel and the warm run took
# every one from the user tier. Sets kernels to their number.
demo_test_cold_and_warm() {
  local demo=$1
  shift
  "$demo" "$@" --report "$work_dir/cold.txt" || fail "the cold run exited $?"
  "$demo" "$@" --report "$work_dir/warm.txt" --baseline "$work_dir/cold.txt" ||
    fail "the warm run exited $?"

  local run report
  for run in cold warm; do
    report=$work_dir/$run.txt
    kernels=$(value "$report" kernels)
    [[ $kernels -ge 8 ]] || fail "$run run: $kernels kernels, want at least 8"
    [[ $(value "$report" ok) == "$kernels" ]] || fail "$run run: not every result is right"
  done
  kernels=$(value "$work_dir/cold.txt" kernels)
  [[ $(value "$work_dir/cold.txt" tier.compiled) == "$kernels" ]] ||
    fail "cold run: $(value "$work_dir/cold.txt" tier.compiled) of $kernels kernels compiled"
  [[ $(value "$work_dir/warm.txt" tier.user) == "$kernels" ]] ||
    fail "warm run: $(value "$work_dir/warm.txt" tier.user) of $kernels kernels from the user tier"
}
