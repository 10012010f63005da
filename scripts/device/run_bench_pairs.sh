#!/usr/bin/env bash
# Before and after, in the same minutes: the hit benchmarks of two builds,
# taking turns on one quiet machine (issue 42: speed must not regress).
#   BEFORE=<folder with hit_latency, include_hit, process_ready>
#   AFTER=<the same, of this tree>   (default build-device/bench)
#   ROUNDS=<turns of each>           (default 3)
# From the device tool, after pack.sh, with the baseline's three programs
# copied into build-device/baseline-bench/:
#   run(command="bash scripts/device/run_bench_pairs.sh", carry=["build-device"])
# Everything it prints also lands in $OUT (or ./bench-pairs-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench-pairs-out}
mkdir -p "$out"
b=$PWD/build-device
before=${BEFORE:-$b/baseline-bench}
after=${AFTER:-$b/bench}
rounds=${ROUNDS:-3}
libs=$b/src:$b/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KCACHE_LOG_LEVEL=${KCACHE_LOG_LEVEL:-warning}
status=0
{
  nvidia-smi --query-gpu=name --format=csv,noheader || true
  nproc
  for round in $(seq 1 "$rounds"); do
    for build in before after; do
      dir=$before
      [[ $build == after ]] && dir=$after
      echo
      echo "=== round $round, $build: hit_latency ==="
      LD_LIBRARY_PATH=$libs "$dir/hit_latency" --rounds=8 --scale=0.25 --sizes=8,64 \
        --api-entries=64 || status=1
      echo "=== round $round, $build: include_hit ==="
      LD_LIBRARY_PATH=$libs "$dir/include_hit" --rounds=4000 || status=1
      echo "=== round $round, $build: process_ready ==="
      LD_LIBRARY_PATH=$libs "$dir/process_ready" --processes=30 || status=1
    done
  done
  exit "$status"
} 2>&1 | tee "$out/bench_pairs.log"
exit "${PIPESTATUS[0]}"
