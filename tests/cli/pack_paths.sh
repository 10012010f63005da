#!/usr/bin/env bash
# Relative paths in a pack (issue 11): a command recorded with a relative
# program (`./cc.sh {in} {out}`) is found in the folder it was recorded
# in, whatever folder pack runs from; a --command given to pack with a
# relative program names the file where pack runs; a --work folder that
# is the package's own path is a usage error before any compile.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

mkdir -p "$T/project" "$T/elsewhere"
# Copies its input and says (in a file beside it) that it ran.
cat >"$T/project/cc.sh" <<'SCRIPT'
#!/bin/sh
echo ran >>"$(dirname "$0")/ran"
cp "$1" "$2"
SCRIPT
chmod +x "$T/project/cc.sh"
cp "$T/project/cc.sh" "$T/elsewhere/mycc.sh"
printf 'one\n' >"$T/project/one.txt"
printf 'two\n' >"$T/project/two.txt"

cd "$T/project" || fail "cd $T/project"
for name in one two; do
  KCACHE_RECORD="$T/m.jsonl" compile_raw --backend command --command "./cc.sh {in} {out}" \
    --source "$name.txt" --target fake1
  expect_rc 0
done
rm -f "$T/project/ran"

# From another folder, with two jobs and with one: the recorded program.
cd "$T/elsewhere" || fail "cd $T/elsewhere"
for jobs in 2 1; do
  run pack --manifest "$T/m.jsonl" --target fake1 --output "$T/pkg$jobs/fake1.kdb" --jobs "$jobs"
  expect_rc 0
  expect_contains "packed from elsewhere, --jobs $jobs" "packed 2 kernels for fake1" "$OUT"
  expect_not_contains "the recorded keys came out, --jobs $jobs" "another key now" "$ERR"
done
expect_eq "the recorded compiler ran" 4 "$(wc -l <"$T/project/ran")"

# --command ./mycc.sh: the one where pack runs, not one in the project.
run pack --manifest "$T/m.jsonl" --target fake1 --output "$T/pkg-mine/fake1.kdb" --jobs 2 \
  --command "./mycc.sh {in} {out}"
expect_rc 0
expect_contains "packed with the pack's own compiler" "packed 2 kernels for fake1" "$OUT"
expect_eq "pack's --command ran" 2 "$(wc -l <"$T/elsewhere/ran")"
expect_eq "the recorded compiler did not" 4 "$(wc -l <"$T/project/ran")"

# --work naming the package itself (or the same path spelled otherwise):
# nothing compiled, nothing made.
for work in "$T/pkg-same/fake1.kdb" "$T/pkg-same/./fake1.kdb/" "../pkg-same/fake1.kdb"; do
  run pack --manifest "$T/m.jsonl" --target fake1 --output "$T/pkg-same/fake1.kdb" --work "$work"
  expect_rc 2
  expect_contains "--work $work is refused" "is the package's path" "$ERR"
  [[ ! -e "$T/pkg-same/fake1.kdb" ]] || fail "--work $work: pack made $T/pkg-same/fake1.kdb"
done
# Or a folder inside it: refused before compiling (an audit's was found
# only at the rename, every kernel compiled and a folder left in its place).
run pack --manifest "$T/m.jsonl" --target fake1 --output "$T/pkg-same/fake1.kdb" \
  --work "$T/pkg-same/fake1.kdb/w"
expect_rc 2
expect_contains "--work inside --output is refused" "lies inside the package's path" "$ERR"
[[ ! -e "$T/pkg-same/fake1.kdb" ]] || fail "--work inside: pack made $T/pkg-same/fake1.kdb"
expect_eq "nothing compiled for a refused --work" 2 "$(wc -l <"$T/elsewhere/ran")"
pass
