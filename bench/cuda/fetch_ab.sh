#!/usr/bin/env bash
# Key and system-tier lookup of first uses, with the CPU's caches emptied
# before each request, for several builds of libkcache taking turns
# (issue 11; docs/benchmarks.md, "A first-use package hit with cold
# caches"). No GPU: D comes from `cuda_load_bench gen` and `prepare
# --target sm_90_132`.
#
#   [SET=big] bench/cuda/fetch_ab.sh BENCH D ROUNDS THRASH_MB LIBDIR...
#
# BENCH: a cuda_load_bench; each LIBDIR holds a libkcache.so.0. Each round
# runs one process per build (pinned to CPU 1 when there is one); each
# prints the median and p10 of its 1000-odd lookups; the last lines give,
# per build, the median over its processes.
set -euo pipefail
bench=$1 dir=$2 rounds=$3 thrash=$4
shift 4
cpu=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then cpu=(taskset -c 1); fi
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for _ in $(seq "$rounds"); do
  for lib in "$@"; do
    "${cpu[@]}" env LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      KCACHE_BENCH_THRASH_MB="$thrash" "$bench" measure --dir "$dir" --mode fetch_system \
      --set "${SET:-small}" 2>/dev/null |
      python3 -c '
import sys
v = sorted(float(f[3]) for f in (l.split() for l in sys.stdin) if f and f[0] == "fetch_system")
print(sys.argv[1], v[len(v) // 2], v[len(v) // 10])' "$lib" >>"$results"
  done
done
python3 - "$results" <<'PY'
import collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    lib, median, p10 = line.split()
    runs[lib].append((float(median), float(p10)))
for lib, values in runs.items():
    medians = sorted(m for m, _ in values)
    p10s = sorted(p for _, p in values)
    print(f"{lib}: median {medians[len(medians) // 2]:.2f} us, p10 {p10s[len(p10s) // 2]:.2f} us "
          f"({len(values)} processes: {' '.join(f'{m:.2f}' for m in medians)})")
PY
