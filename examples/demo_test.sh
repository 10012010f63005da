#!/usr/bin/env bash
# CTest demo.quick: two --quick runs of the demo on one fresh cache. The
# first must compile every kernel, the second must load every kernel from the
# user tier, and every result must be right. Exit 125 (skipped) when there is
# no OpenCL device (exit 1 when KCACHE_REQUIRE_BACKENDS names opencl).
#
#   demo_test.sh PATH/TO/kcache_demo
set -euo pipefail

demo=${1:?usage: demo_test.sh PATH/TO/kcache_demo}
# shellcheck source=SCRIPTDIR/demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/demo_lib.sh"
if ! probe_err=$("$demo" --list-devices 2>&1 >/dev/null); then
  demo_skip_backend opencl "no OpenCL device (kcache_demo --list-devices found none)" "$probe_err"
fi

demo_make_work_dir kcache-demo-test
demo_use_only_cache "$work_dir/cache"
demo_test_cold_and_warm "$demo" --quick
echo "PASS: $kernels kernels compiled cold, all loaded from the user tier warm, all results right"
