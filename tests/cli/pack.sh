#!/usr/bin/env bash
# kcache pack (issue 11): the kernels KCACHE_RECORD wrote, compiled for a
# target into a package the system tier then serves; a line that does not
# parse and a kernel that cannot be compiled are named (with their line
# numbers), the others still packed, exit 1; a second pack compiles
# nothing (its work folder is the resume store).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

export KCACHE_RECORD="$T/m.jsonl"
printf '__kernel void two(__global float* x) { x[0] = 2; }\n' >"$T/src/two.cl"
printf '__kernel void three(__global float* x) { x[0] = 3; }\n' >"$T/src/three.cl"
for name in add two three; do compile_ok --source "src/$name.cl" --output "out/$name.bin"; done
unset KCACHE_RECORD
expect_eq "recorded kernels" 3 "$(wc -l <"$T/m.jsonl")"
echo 'not json' >>"$T/m.jsonl"
python3 - "$T/m.jsonl" <<'PY' || fail "could not write a line for a backend that does not exist"
import json, sys
first = json.loads(open(sys.argv[1]).readline())
first["backend"] = "no-such-backend"
first["source"] = first["source"] + "// another\n"
open(sys.argv[1], "a").write(json.dumps(first) + "\n")
PY
# The first kernel twice more: the same line again (manifests joined), and
# recorded for another target (another key), which is this target's kernel
# once packed for it. Neither is compiled; the repeats are counted apart.
python3 - "$T/m.jsonl" <<'PY' || fail "could not write the repeated lines"
import json, sys
text = open(sys.argv[1]).readline()
again = json.loads(text)
again["target"]["arch"] = "gfx90a"
again["key"] = "0123456789abcdef0123456789abcdef"
open(sys.argv[1], "a").write(text + json.dumps(again) + "\n")
PY

mkdir -p "$T/pkg"
pack_args=(pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/gfx906_60.kdb"
  --jobs 2)
run "${pack_args[@]}"
expect_rc 1
expect_contains "pack names the bad line" "skipped line 4: not valid JSON" "$ERR"
expect_contains "pack names the kernel that failed" "failed line 5:" "$ERR"
expect_eq "kernels compiled, each once" 4 "$(grep -c '^pack: .* line [0-9]* \(compiled\|failed\)' <<<"$ERR")"
expect_contains "pack says what it wrote" "packed 3 kernels for gfx906_60 into $T/pkg/gfx906_60.kdb (3 compiled, 0 already in $T/pkg/gfx906_60.kdb.pack, 2 repeating an earlier line, 1 failed, 1 line skipped)" "$OUT"
[[ -s "$T/pkg/gfx906_60.kdb" ]] || fail "pack wrote no package"
# Where its time went, the parts adding up to the whole (give or take the
# printing between them).
# The jobs' own time is said apart, by what it went to: lines found to
# repeat a kernel are not counted as compiling.
took_pattern='^took ([0-9.]+) s: ([0-9.]+) s before compiling, ([0-9.]+) s in ([0-9]+) jobs? \(their time: ([0-9.]+) s compiling, ([0-9.]+) s on lines already built or repeating another; (the first kernel done after ([0-9.]+) s|none compiled)\), ([0-9.]+) s writing the package$'
took="$(grep '^took ' <<<"$OUT")"
[[ "$took" =~ $took_pattern ]] || fail "pack's account of its time: '$took' in $OUT"
python3 - "${BASH_REMATCH[@]:1}" <<'PY' || fail "pack's times do not add up: $took"
import sys
total, before, jobs, count, compiling, finding, _, first, writing = sys.argv[1:]
total, before, jobs, compiling, finding, first, writing = map(
    float, (total, before, jobs, compiling, finding, first, writing))
assert abs(total - (before + jobs + writing)) <= 0.1, sys.argv
assert first <= jobs + 0.005, sys.argv
assert int(count) == 2, sys.argv
# What the jobs spent is within what they had (give or take the rounding).
assert compiling + finding <= int(count) * jobs + 0.02, sys.argv
assert compiling > 0, sys.argv
PY
expect_not_contains "the recorded keys came out" "another key now" "$ERR"

run info "$T/pkg/gfx906_60.kdb" --json
expect_rc 0
python3 - "$OUT" <<'PY' || fail "kcache info PKG: $OUT"
import json, sys
info = json.loads(sys.argv[1])[0]
assert info["kernels"] == 3, info
assert info["target"] == "gfx906_60", info
assert info["metadata"]["db"] == "gfx906_60", info
assert info["metadata"]["key_format"].isdigit(), info
assert int(info["metadata"]["created"]) > 1700000000, info
compilers = info["metadata"]["compilers"]
assert len(compilers) == 3 and all(c.startswith("command | test-cp | cp {in} {out} | ") for c in compilers), compilers
assert info["trusted"] is True, info
PY
run info "$T/pkg/gfx906_60.kdb"
expect_contains "info PKG in words" "kernels       3" "$OUT"
expect_contains "info PKG names its target" "target        gfx906_60" "$OUT"
run info "$T/pkg/none.kdb"
expect_rc 1
# In JSON, one object for each package named, in order: one that cannot
# be read says why (and the exit status says something failed); verify
# cannot count the bad entries of a package it cannot read (null, not 0).
head -c 100 "$T/pkg/gfx906_60.kdb" >"$T/pkg/cut.kdb"
run info "$T/pkg/none.kdb" "$T/pkg/gfx906_60.kdb" "$T/pkg/cut.kdb" --json
expect_rc 1
python3 - "$OUT" "$T" <<'PY' || fail "kcache info --json of three packages, two unreadable: $OUT"
import json, sys
missing, good, cut = json.loads(sys.argv[1])
t = sys.argv[2]
assert missing["path"] == t + "/pkg/none.kdb" and missing["error"], missing
assert good["kernels"] == 3 and "error" not in good, good
assert cut["path"] == t + "/pkg/cut.kdb" and cut["error"], cut
PY
run verify "$T/pkg/cut.kdb" --json
expect_rc 1
expect_eq "verify --json, an unreadable package's bad entries" null \
  "$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])[0]["bad_entries"]))' "$OUT")"

run "${pack_args[@]}"
expect_rc 1
expect_contains "a second pack compiles nothing" "(0 compiled, 3 already in $T/pkg/gfx906_60.kdb.pack, 2 repeating an earlier line" "$OUT"
expect_contains "no first kernel is timed when none was compiled" "; none compiled)" "$OUT"
# Its jobs found every kernel built or repeated: none of their time was
# compiling (it was all called compiling).
took="$(grep '^took ' <<<"$OUT")"
[[ "$took" =~ $took_pattern ]] || fail "pack's account of its time: '$took' in $OUT"
expect_eq "a pack that compiles nothing: the jobs' time compiling" 0.00 "${BASH_REMATCH[5]}"

# Packed with another compiler id, the keys are not the recorded ones:
# said once, the kernels packed all the same.
mkdir -p "$T/pkg2"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg2/gfx906_60.kdb" --compiler-id test-cp-2
expect_rc 1
expect_contains "another toolchain is noted" "3 kernels recorded for this target have another key now" "$ERR"
expect_contains "and packed" "packed 3 kernels" "$OUT"

# Installed, the package serves every kernel to a fresh user cache.
cp "$T/pkg/gfx906_60.kdb" "$T/sys/"
export KCACHE_CUSTOM_CACHE_DIR="$T/fresh"
for name in add two three; do
  compile_ok --source "src/$name.cl" --output "out/$name.sys.bin"
  expect_eq "$name from the package: tier" system "$TIER"
  cmp -s "out/$name.bin" "out/$name.sys.bin" || fail "$name: the package's binary differs"
done

run pack --manifest "$T/none.jsonl" --target gfx906_60 --output "$T/pkg/x.kdb"
expect_rc 1
expect_contains "a missing manifest" "cannot read --manifest $T/none.jsonl: No such file" "$ERR"
run pack --manifest "$T/m.jsonl" --output "$T/pkg/x.kdb"
expect_rc 2

# A line without its key is skipped (formats.md §4), a blank one (spaces
# too) ignored, and a file of garbage names its first 20 bad lines only.
python3 - "$T/m.jsonl" "$T/odd.jsonl" <<'PY' || fail "could not write odd lines"
import json, sys
first = json.loads(open(sys.argv[1]).readline())
del first["key"]
lines = ["garbage %d" % i for i in range(25)] + ["   \t", json.dumps(first)]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
run pack --manifest "$T/odd.jsonl" --target gfx906_60 --output "$T/pkg/odd.kdb"
expect_rc 1
expect_contains "a line without its key" "holds no kernel to pack" "$ERR"
expect_eq "bad lines named" 20 "$(grep -c '^kcache: skipped line' <<<"$ERR")"
expect_contains "the rest counted" "kcache: skipped 6 more lines" "$ERR"
expect_not_contains "a blank line is no problem" "line 26" "$ERR"

# What pack reads and writes is checked before any compile. A manifest
# must be a regular file: /dev/zero or a FIFO would fill the memory or
# hang it.
run pack --manifest /dev/zero --target gfx906_60 --output "$T/pkg/x.kdb"
expect_rc 1
expect_contains "/dev/zero is refused" "kcache reads only regular files" "$ERR"
mkfifo "$T/fifo"
run pack --manifest "$T/fifo" --target gfx906_60 --output "$T/pkg/x.kdb"
expect_rc 1
run pack --manifest "$T/pkg" --target gfx906_60 --output "$T/pkg/x.kdb"
expect_rc 1
expect_contains "a folder is said to be one" "it is a directory" "$ERR"
# The package never replaces its own manifest.
cp "$T/m.jsonl" "$T/same.jsonl"
run pack --manifest "$T/same.jsonl" --target gfx906_60 --output "$T/same.jsonl"
expect_rc 2
expect_contains "output = manifest" "is the manifest itself" "$ERR"
cmp -s "$T/m.jsonl" "$T/same.jsonl" || fail "the manifest was changed"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output ""
expect_rc 2
# A work folder that cannot keep what is compiled: said first, nothing
# compiled.
touch "$T/work-file"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/w.kdb" --work "$T/work-file"
expect_rc 1
expect_contains "a work folder that is a file" "--work $T/work-file:" "$ERR"
expect_not_contains "nothing compiled" "compiled" "$OUT"
mkdir -p "$T/open-work"
chmod 777 "$T/open-work"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/w.kdb" --work "$T/open-work"
expect_rc 1
expect_contains "a work folder others can write" "another user could have written it" "$ERR"
[[ ! -e "$T/pkg/w.kdb" ]] || fail "a package was written from a refused work folder"

# A kernel compiled but too large to keep is a failed line, not a silent
# gap in the package; its log reaches the summary when it fails to
# compile.
python3 - "$T/m.jsonl" "$T/big.jsonl" <<'PY' || fail "could not write a large line"
import json, sys
first = json.loads(open(sys.argv[1]).readline())
big = dict(first)
big["source"] = "// " + "x" * (65 << 20) + "\n"
open(sys.argv[2], "w").write(json.dumps(big) + "\n" + json.dumps(first) + "\n")
PY
run pack --manifest "$T/big.jsonl" --target gfx906_60 --output "$T/pkg/big.kdb" --jobs 1
expect_rc 1
expect_contains "the large kernel fails" "failed line 1: compiled, but the work folder could not keep it" "$ERR"
expect_contains "the other is packed" "packed 1 kernel " "$OUT"

# Jobs are processes: a compiler that kills the process compiling it (its
# worker) fails its own kernel only; the other kernels that worker held are
# compiled by another, the dead worker is replaced.
head -n 3 "$T/m.jsonl" >"$T/killer.jsonl"
python3 - "$T/killer.jsonl" <<'PY' || fail "could not write a killing line"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
killer = dict(lines[0])
killer["compiler"] = dict(killer["compiler"])
killer["compiler"]["id"] = killer["compiler"]["id"].replace("cp {in} {out}", 'sh -c "kill -9 $PPID" {in} {out}')
killer["source"] += "// kills its worker\n"
lines.insert(1, killer)
open(sys.argv[1], "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
run pack --manifest "$T/killer.jsonl" --target gfx906_60 --output "$T/pkg/killer.kdb" --jobs 2
expect_rc 1
expect_contains "the killing line fails" "failed line 2: the worker compiling it ended (it was killed by signal 9), twice" "$ERR"
expect_contains "the first loss is said" "kcache: note: the job compiling line 2 ended (it was killed by signal 9); line 2 is compiled again" "$ERR"
expect_contains "the others are packed" "packed 3 kernels for gfx906_60" "$OUT"
expect_eq "one line failed" 1 "$(grep -c '^kcache: failed' <<<"$ERR")"

# Interrupted (here by its own compiler, so no timing is involved), a
# pack says what it keeps and how to go on, and ends as the signal ends it.
# The compiler's parent is the pack's worker, whose parent is the pack.
printf '#!/bin/sh\nkill -INT "$(awk '"'"'{print $4}'"'"' "/proc/$PPID/stat")"\n' >"$T/interrupt.sh"
chmod +x "$T/interrupt.sh"
python3 - "$T/m.jsonl" "$T/interrupt.jsonl" "$T/interrupt.sh" <<'PY' || fail "could not write an interrupting line"
import json, sys
line = json.loads(open(sys.argv[1]).readline())
line["compiler"] = dict(line["compiler"])
line["compiler"]["id"] = line["compiler"]["id"].replace("cp {in} {out}", sys.argv[3] + " {in} {out}")
line["source"] += "// interrupts the pack\n"
open(sys.argv[2], "w").write(json.dumps(line) + "\n")
PY
run pack --manifest "$T/interrupt.jsonl" --target gfx906_60 --output "$T/pkg/int.kdb" --jobs 1
expect_rc 130
expect_contains "an interrupted pack says how to go on" "interrupted; what was compiled is kept in $T/pkg/int.kdb.pack: run the same pack again" "$ERR"
expect_eq "piped, no progress line to end before it" 0 "$(grep -c '^$' <<<"$ERR" || true)"

# Kernels that do not compile: their compiler's log is shown under them,
# once for lines that failed alike.
head -n 1 "$T/m.jsonl" >"$T/broken.jsonl"
python3 - "$T/broken.jsonl" <<'PY' || fail "could not write a failing line"
import json, sys
line = json.loads(open(sys.argv[1]).readline())
line["compiler"] = dict(line["compiler"])
line["compiler"]["id"] = line["compiler"]["id"].replace(
    "cp {in} {out}", 'sh -c "echo first problem >&2; echo second problem >&2; exit 1" {in} {out}')
for n in (1, 2):
    line["source"] += "// does not compile (%d)\n" % n
    open(sys.argv[1], "a").write(json.dumps(line) + "\n")
PY
run pack --manifest "$T/broken.jsonl" --target gfx906_60 --output "$T/pkg/broken.kdb" --jobs 2
expect_rc 1
expect_contains "the failing lines, once" "failed lines 2, 3: sh failed" "$ERR"
expect_eq "said once" 1 "$(grep -c 'first problem' <<<"$ERR")"
expect_contains "counted apart" "2 failed" "$OUT"
expect_contains "its log, first line" "    first problem" "$ERR"
expect_contains "its log, second line" "    second problem" "$ERR"

# A line of a later manifest version is read for the fields this kcache
# knows (versions only add fields, docs/formats.md); a version below 1 is
# no manifest line.
python3 - "$T/m.jsonl" "$T/versions.jsonl" <<'PY' || fail "could not write the versioned lines"
import json, sys
line = json.loads(open(sys.argv[1]).readline())
with open(sys.argv[2], "w") as out:
    for version, note in ((2, "later"), (0, "none")):
        line["kcache_manifest"] = version
        line["a_later_field"] = {"what": note}
        line["source"] += "// version %d\n" % version
        out.write(json.dumps(line) + "\n")
PY
run pack --manifest "$T/versions.jsonl" --target gfx906_60 --output "$T/pkg/versions.kdb"
expect_rc 1
expect_contains "the later version's line is packed" "packed 1 kernel for" "$OUT"
expect_contains "version 0 is named" "skipped line 2: manifest version 0 (versions start at 1)" "$ERR"

# A target the lines' backend can take in no case (an AMD arch for NVRTC's
# lines) is a usage error before anything is made, as for kcache compile;
# beside lines that can take it, such lines are not for this package: left
# out and said, by backend, and the pack succeeds (an audit saw one
# backend's lines "skipped", another's "failed", exit 1 both ways).
python3 - "$T/m.jsonl" "$T/cuda.jsonl" "$T/mixed.jsonl" <<'PY' || fail "could not write the nvrtc lines"
import json, sys
first = open(sys.argv[1]).readline()
line = json.loads(first)
line["backend"] = "nvrtc"
open(sys.argv[2], "w").write(json.dumps(line) + "\n")
open(sys.argv[3], "w").write(first + json.dumps(line) + "\n")
PY
run pack --manifest "$T/cuda.jsonl" --target gfx906_60 --output "$T/cuda/gfx906_60.kdb"
expect_rc 2
expect_contains "why" "kcache: --target gfx906_60: no line of --manifest $T/cuda.jsonl can be compiled for it (nvrtc cannot compile for gfx906_60: 'gfx906' is not a CUDA arch" "$ERR"
[[ ! -e "$T/cuda" ]] || fail "a pack refused for its target made $(find "$T/cuda")"
# The user's limits are the user cache's: a pack's work folder keeps every
# kernel it compiled until the package is written (with them, pack wrote
# a package of the last few and said it had packed them all).
KCACHE_MAX_ENTRIES=1 KCACHE_MAX_SIZE=1 run "${pack_args[@]/"$T/pkg/gfx906_60.kdb"/"$T/pkg/limited.kdb"}"
expect_rc 1
expect_contains "limits do not cut a pack" "packed 3 kernels for gfx906_60 into $T/pkg/limited.kdb (3 compiled" "$OUT"

# A file at --output that is not a package is not replaced (a mistyped
# name); a pack that packs nothing says that an earlier package stays.
printf 'my notes\n' >"$T/pkg/notes.txt"
run "${pack_args[@]/"$T/pkg/gfx906_60.kdb"/"$T/pkg/notes.txt"}"
expect_rc 1
expect_contains "not a package: not replaced" "is a file that is not a kcache package; kcache does not replace it" "$ERR"
expect_eq "the notes stay" "my notes" "$(cat "$T/pkg/notes.txt")"
head -n 1 "$T/m.jsonl" | sed 's/cp {in} {out}/false {in} {out}/' >"$T/fails.jsonl"
run pack --manifest "$T/fails.jsonl" --target gfx906_60 --output "$T/pkg/gfx906_60.kdb"
expect_rc 1
expect_contains "an earlier package stays, said" "no package written ($T/pkg/gfx906_60.kdb is an earlier pack's, left as it was)" "$ERR"

# A target's features are no part of its db's name: the package says them
# (it serves requests for gfx906_60:xnack- alone).
mkdir -p "$T/features"
KCACHE_RECORD="$T/features/m.jsonl" KCACHE_CUSTOM_CACHE_DIR="$T/features/c" \
  run compile "${CP_ARGS[@]}" --source "$T/src/add.cl" --target "gfx906_60:xnack-"
expect_rc 0
run pack --manifest "$T/features/m.jsonl" --target "gfx906_60:xnack-" --output "$T/features/gfx906_60.kdb"
expect_rc 0
run info "$T/features/gfx906_60.kdb"
expect_contains "info says the target's features" "target        gfx906_60:xnack-" "$OUT"
run info "$T/features/gfx906_60.kdb" --json
expect_contains "and in JSON" '"features": [' "$OUT"

run pack --manifest "$T/mixed.jsonl" --target gfx906_60 --output "$T/pkg/mixed.kdb"
expect_rc 0
expect_contains "the command line is packed" "packed 1 kernel for gfx906_60" "$OUT"
expect_contains "the nvrtc line is said" "note: 1 line of backend nvrtc left out: nvrtc cannot compile for gfx906_60: 'gfx906' is not a CUDA arch" "$ERR"
pass
