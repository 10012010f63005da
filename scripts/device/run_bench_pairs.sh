#!/usr/bin/env bash
# Before and after, in the same minutes: the hit benchmarks of two builds,
# taking turns on one quiet machine (issue 42: speed must not regress).
#   BEFORE=<folder with hit_latency, include_hit, process_ready>
#                                    (default build-bench/before)
#   AFTER=<the same, of this tree>   (default build-bench/after)
#   ROUNDS=<turns of each>           (default 3)
#   PIN=<cpu>                        (taskset: one core, so that both builds
#                                     meet the same core and frequency)
# build-bench/ (ignored by git) holds the two builds' programs (Release,
# the same flags) and build-bench/deps/ the libraries they link, as pack.sh
# gathers them; then, from the device tool:
#   run(command="bash scripts/device/run_bench_pairs.sh", carry=["build-bench"])
# Everything it prints also lands in $OUT (or ./bench-pairs-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench-pairs-out}
mkdir -p "$out"
b=$PWD/build-bench
before=${BEFORE:-$b/before}
after=${AFTER:-$b/after}
rounds=${ROUNDS:-3}
libs=$b/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KCACHE_LOG_LEVEL=${KCACHE_LOG_LEVEL:-warning}
status=0
pin=()
[[ -n "${PIN:-}" ]] && pin=(taskset -c "$PIN")
{
  nvidia-smi --query-gpu=name --format=csv,noheader || true
  nproc
  for round in $(seq 1 "$rounds"); do
    for build in before after; do
      dir=$before
      [[ $build == after ]] && dir=$after
      echo
      echo "=== round $round, $build: hit_latency ==="
      LD_LIBRARY_PATH=$libs "${pin[@]}" "$dir/hit_latency" --rounds=8 --scale=0.25 --sizes=8,64 \
        --api-entries=64 || status=1
      echo "=== round $round, $build: include_hit ==="
      LD_LIBRARY_PATH=$libs "${pin[@]}" "$dir/include_hit" --rounds=4000 || status=1
      echo "=== round $round, $build: process_ready ==="
      LD_LIBRARY_PATH=$libs "${pin[@]}" "$dir/process_ready" --processes=30 || status=1
    done
  done
  exit "$status"
} 2>&1 | tee "$out/bench_pairs.log"
exit "${PIPESTATUS[0]}"
