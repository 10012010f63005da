#!/usr/bin/env bash
# kcache gc: other kcache versions' folders (only the user's own, holding
# nothing but kcache's files; links never followed), entries of compilers
# none of whose entries was used for --unused-for, quarantined files older
# than that. A dry run with --dry-run (and on a terminal unless --yes).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_ok --source src/add.cl
compile_ok --source src/mul.cl
compile_raw --backend command --command "cp {in} {out}" --compiler-id other-cp --target gfx906_60 \
  --source src/add.cl
expect_rc 0
version="$(kcache_version)"
mkdir -p "$T/cache/0.3.0/ab" "$T/cache/9.9.9" "$T/elsewhere/1.0.0" "$T/cache/$version/quarantine"
printf 'old log' >"$T/cache/0.3.0/gfx906_60.ukdb"
printf 'old entry' >"$T/cache/0.3.0/ab/abcdef"
printf 'mine' >"$T/cache/9.9.9/notes.txt"
printf 'keep' >"$T/elsewhere/1.0.0/x.ukdb"
ln -s "$T/elsewhere/1.0.0" "$T/cache/1.0.0"
printf 'bad bytes' >"$T/cache/$version/quarantine/old.bad"
touch -d '40 days ago' "$T/cache/$version/quarantine/old.bad"
printf 'bad bytes' >"$T/cache/$version/quarantine/new.bad"

run gc --dry-run --json
expect_rc 0
expect_eq "gc --dry-run: removes nothing" false "$(json_get "$OUT" removed)"
expect_eq "gc: the other version's folder" "$T/cache/0.3.0" "$(json_py "$OUT" '" ".join(i["path"] for i in d["version_folders"])')"
expect_eq "gc: a folder with files kcache did not make is left alone" "$T/cache/9.9.9" \
  "$(json_py "$OUT" '" ".join(i["path"] for i in d["kept"])')"
expect_eq "gc: no compiler is old yet" 0 "$(json_py "$OUT" 'len(d["compilers"])')"
expect_eq "gc: the old quarantined file" "$T/cache/$version/quarantine/old.bad" \
  "$(json_py "$OUT" '" ".join(i["path"] for i in d["quarantined"])')"
[[ -d "$T/cache/0.3.0" ]] || fail "gc --dry-run removed a folder"
checked "gc --dry-run removes nothing"

run gc --dry-run
expect_rc 0
expect_contains "gc --dry-run says it is one" "would remove" "$OUT"
expect_contains "gc --dry-run names the folder" "0.3.0" "$OUT"

# Every compiler counts as unused with --unused-for 0: their entries go.
# The command backend's identity names the input file ({in} is add.cl or
# mul.cl: a compiler may read its input by its extension), so test-cp is
# two identities here and other-cp one.
run gc --dry-run --unused-for 0 --json
expect_eq "gc --unused-for 0: every compiler identity" 3 "$(json_py "$OUT" 'len(d["compilers"])')"
expect_eq "gc --unused-for 0: their entries" 3 "$(json_py "$OUT" 'sum(i["entries"] for i in d["compilers"])')"

# No terminal, no flag: it acts (a cron job's gc).
run gc
expect_rc 0
expect_contains "gc says what it removed" "removed:" "$OUT"
[[ ! -e "$T/cache/0.3.0" ]] || fail "gc left the other version's folder"
[[ -f "$T/cache/9.9.9/notes.txt" ]] || fail "gc removed a folder with files kcache did not make"
[[ -f "$T/elsewhere/1.0.0/x.ukdb" && -L "$T/cache/1.0.0" ]] || fail "gc followed a link"
[[ ! -e "$T/cache/$version/quarantine/old.bad" ]] || fail "gc left the old quarantined file"
[[ -f "$T/cache/$version/quarantine/new.bad" ]] || fail "gc removed a new quarantined file"
checked "gc removed the other version, the old quarantined file, and nothing else"
run list --json
expect_eq "gc kept the entries of compilers in use" 3 "$(json_py "$OUT" 'len(d)')"

run gc --yes --unused-for 0 --json
expect_rc 0
expect_eq "gc --yes --unused-for 0: removed" true "$(json_get "$OUT" removed)"
run list --json
expect_eq "gc --unused-for 0 removed every entry" 0 "$(json_py "$OUT" 'len(d)')"
run verify
expect_rc 0

run gc --unused-for soon
expect_rc 2
run gc --yes --dry-run
expect_rc 2
KCACHE_DISABLE_CACHE=1 run gc
expect_rc 1
pass
