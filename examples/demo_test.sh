#!/usr/bin/env bash
# CTest demo.quick: two --quick runs of the demo on one fresh cache. The
# first must compile every kernel, the second must load every kernel from the
# user tier, and every result must be right. Exit 125 (skipped) when there is
# no OpenCL device.
#
#   demo_test.sh PATH/TO/kcache_demo
set -euo pipefail

demo=${1:?usage: demo_test.sh PATH/TO/kcache_demo}
if ! "$demo" --list-devices >/dev/null 2>&1; then
  echo "SKIP: no OpenCL device (kcache_demo --list-devices found none)"
  exit 125
fi

work_dir=$(mktemp -d "${TMPDIR:-/tmp}/kcache-demo-test.XXXXXX")
trap 'rm -rf "$work_dir"' EXIT
export KCACHE_CUSTOM_CACHE_DIR=$work_dir/cache
export KCACHE_SYSTEM_DB_PATH=$work_dir/no-system-db
unset KCACHE_DISABLE_CACHE

# value FILE KEY: the value of KEY in a demo report.
value() { sed -n "s/^$2=//p" "$1"; }

fail() {
  echo "FAIL: $*"
  exit 1
}

"$demo" --quick --report "$work_dir/cold.txt" || fail "the cold run exited $?"
"$demo" --quick --report "$work_dir/warm.txt" --baseline "$work_dir/cold.txt" ||
  fail "the warm run exited $?"

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
echo "PASS: $kernels kernels compiled cold, all loaded from the user tier warm, all results right"
