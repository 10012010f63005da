#!/usr/bin/env bash
# KCACHE_RECORD from the tool: each kernel compiled lands in the manifest
# once (a hit adds nothing, another kernel one line), as JSON lines a
# script can read; `kcache info` shows the setting; with the cache off the
# kernel is still recorded; a manifest that cannot be written warns once
# and the compile still succeeds.
source "$(dirname "$0")/lib.sh"
fresh_env

m="$T/kernels.jsonl"
export KCACHE_RECORD="$m"
compile_ok --source src/add.cl --output out/a.bin
compile_ok --source src/add.cl --output out/b.bin
expect_eq "lines after a compile and a hit" 1 "$(wc -l <"$m")"
printf '__kernel void other(__global float* x) { x[0] = 2; }\n' >"$T/src/other.cl"
compile_ok --source src/other.cl --output out/c.bin
expect_eq "lines after another kernel" 2 "$(wc -l <"$m")"
python3 - "$m" "$T/src/add.cl" <<'PY' || fail "the manifest does not hold the kernels"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
source = open(sys.argv[2]).read()
assert lines[0]["kcache_manifest"] == 1, lines[0]
assert lines[0]["source"] == source, lines[0]["source"]
assert len(lines[0]["key"]) == 32, lines[0]["key"]
assert lines[0]["key"] != lines[1]["key"]
PY

run info
expect_rc 0
expect_contains "info shows the setting" "$m" "$OUT"

# A whole last line whose newline an editor took off is still a recorded
# kernel: asked again, it is not written twice (and the next line starts
# on a line of its own).
python3 - "$m" <<'PY' || fail "could not take the manifest's last newline off"
import sys
text = open(sys.argv[1]).read()
open(sys.argv[1], "w").write(text.rstrip("\n"))
PY
compile_ok --source src/other.cl --output out/c2.bin
expect_eq "lines after asking again for the unended line's kernel" 2 \
  "$(python3 -c 'import sys; print(len(open(sys.argv[1]).read().splitlines()))' "$m")"
printf '__kernel void fourth(__global float* x) { x[0] = 4; }\n' >"$T/src/fourth.cl"
compile_ok --source src/fourth.cl --output out/f.bin
python3 - "$m" <<'PY' || fail "a line joined the unended one"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 3, len(lines)
assert len({l["key"] for l in lines}) == 3
PY
python3 - "$m" <<'PY' || fail "could not drop the fourth kernel's line"
import sys
lines = open(sys.argv[1]).readlines()
open(sys.argv[1], "w").writelines(lines[:2])
PY

export KCACHE_DISABLE_CACHE=1
printf '__kernel void third(__global float* x) { x[0] = 3; }\n' >"$T/src/third.cl"
compile_ok --source src/third.cl --output out/d.bin
expect_eq "lines after a compile with the cache off" 3 "$(wc -l <"$m")"
unset KCACHE_DISABLE_CACHE

export KCACHE_RECORD="$T/missing/folder/kernels.jsonl"
compile_ok --source src/add.cl --output out/e.bin
expect_eq "warnings with an unwritable manifest" 1 "$(warning_count "$ERR")"
expect_contains "the warning names the manifest" "Cannot record kernels in $T/missing/folder" "$ERR"
