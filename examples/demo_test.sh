#!/usr/bin/env bash
# CTest demo.quick: two --quick runs of the demo on one fresh cache. The
# first must compile every kernel, the second must load every kernel from the
# user tier, and every result must be right. Exit 125 (skipped) when there is
# no OpenCL device.
#
#   demo_test.sh PATH/TO/kcache_demo
set -euo pipefail

demo=${1:?usage: demo_test.sh PATH/TO/kcache_demo}
# shellcheck source=SCRIPTDIR/demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/demo_lib.sh"
if ! "$demo" --list-devices >/dev/null 2>&1; then
  echo "SKIP: no OpenCL device (kcache_demo --list-devices found none)"
  exit 125
fi

demo_make_work_dir kcache-demo-test
demo_use_only_cache "$work_dir/cache"
demo_test_cold_and_warm "$demo" --quick
echo "PASS: $kernels kernels compiled cold, all loaded from the user tier warm, all results right"
