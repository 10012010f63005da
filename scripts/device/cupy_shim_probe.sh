#!/usr/bin/env bash
# Where a served CuPy compile spends its time under the NVRTC shim: one
# cold and one warm process of bench/layers/cupy_shim.py under `kcache run`,
# each NVRTC compile timed from Python, the kernels recorded
# (KCACHE_RECORD), and the headers the keys read packed, so that the
# requests can be replayed on a machine without CuPy.
#   run(command="bash scripts/device/cupy_shim_probe.sh", carry=["build-device"])
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
work=$(mktemp -d)
cat >"$work/timed.py" <<'PY'
import runpy, sys, time, json
from cupy_backends.cuda.libs import nvrtc
real = nvrtc.compileProgram
calls = []
def timed(prog, options):
    t = time.perf_counter()
    try:
        return real(prog, options)
    finally:
        calls.append((time.perf_counter() - t, list(options)))
nvrtc.compileProgram = timed
sys.argv = [sys.argv[1]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
with open(sys.stderr.fileno(), "w", closefd=False) as err:
    for s, o in calls:
        print(f"compile_ms {s*1000:.2f} {json.dumps(o)}", file=err)
    print(f"compile_total_ms {sum(s for s, _ in calls)*1000:.1f} calls {len(calls)}", file=err)
PY
k="$b/tools/kcache/kcache"
for pass in cold warm warm2; do
  echo "== $pass"
  start=$(date +%s%N)
  env CUPY_CACHE_IN_MEMORY=1 KCACHE_CUSTOM_CACHE_DIR="$work/kc" \
    KCACHE_RECORD="$out/cupy.manifest.jsonl" KCACHE_LOG_LEVEL=info \
    "$k" run -- python3 "$work/timed.py" bench/layers/cupy_shim.py 2>&1 | tee "$out/cupy_$pass.log" |
    grep -vE "^compile_ms" | tail -n 8
  echo "process_ms $((($(date +%s%N) - start) / 1000000))"
  sort -k2 -n -r "$out/cupy_$pass.log" | grep ^compile_ms | head -n 5 | cut -c1-300
done
"$k" stats | head -n 8
python3 - "$out/cupy.manifest.jsonl" >"$work/files" <<'PY'
import json, sys, os
seen = set()
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    for h in m.get("key_headers", []):
        name, where, _ = h.rsplit(" ", 2)
        path = os.path.join(where[4:], name) if where.startswith("dir:") else where
        if path not in seen:
            seen.add(path)
            print(path)
PY
wc -l <"$work/files"
tar -cJf "$out/cupy_headers.tar.xz" -P -T "$work/files" && ls -la "$out"
