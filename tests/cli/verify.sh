#!/usr/bin/env bash
# kcache verify finds a corrupt entry (exit 1, names it); verify --repair
# moves it to <dir>/<version>/quarantine/ (exit 0); the next compile of that
# request recompiles. A stale temporary file is reported and removed.
# (Damaged indexes: index_damage.sh; damaged .kdb files: bad_kdb.sh.)
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
udir="$T/cache/$version"

run verify
expect_rc 0

compile_ok --source src/add.cl --output out/good.bin
key="$KEY"
compile_ok --source src/mul.cl
other="$KEY"
entry="$udir/gfx906_60.entries/${key:0:2}/$key"
[[ -f "$entry" ]] || fail "expected the entry file $entry; seen: $(find "$udir")"

run verify
expect_rc 0
run verify --json
expect_rc 0
expect_eq "verify --json: ok" true "$(json_get "$OUT" ok)"
expect_eq "verify --json: entries_checked" 2 "$(json_get "$OUT" entries_checked)"
expect_eq "verify --json: entries_ok" 2 "$(json_get "$OUT" entries_ok)"

# Flip one byte in the middle of the entry.
python3 - "$entry" <<'PY' || fail "could not flip a byte in $entry"
import os, sys
path = sys.argv[1]
mode = os.stat(path).st_mode
os.chmod(path, mode | 0o200)
with open(path, "r+b") as f:
    data = bytearray(f.read())
    i = len(data) // 2
    data[i] ^= 0x5A
    f.seek(0)
    f.write(data)
os.chmod(path, mode)
PY

run verify
expect_rc 1
expect_contains "kcache verify names the corrupt entry" "$key" "$OUT"
expect_not_contains "kcache verify does not name the good entry" "$other" "$OUT"
run verify --json
expect_rc 1
expect_eq "verify --json: ok" false "$(json_get "$OUT" ok)"
expect_eq "verify --json: problems" 1 "$(json_py "$OUT" 'len(d["problems"])')"
expect_contains "verify --json: the problem's path" "$key" "$(json_get "$OUT" problems.0.path)"
expect_eq "verify --json: repaired" false "$(json_get "$OUT" problems.0.repaired)"
[[ -f "$entry" ]] || fail "verify without --repair moved $entry"

run verify --repair
expect_rc 0
expect_contains "kcache verify --repair names the entry" "$key" "$OUT"
[[ ! -e "$entry" ]] || fail "verify --repair left the corrupt entry in place: $entry"
quarantined="$(find "$udir/quarantine" -type f 2>/dev/null)"
[[ -n "$quarantined" ]] || fail "expected the corrupt entry in $udir/quarantine/; $udir holds: $(find "$udir")"
grep -q "$key" <<<"$quarantined" || fail "expected a quarantined file named after $key, seen: $quarantined"

run verify
expect_rc 0
run list --json
expect_eq "entries after the repair" "$other" "$(json_py "$OUT" '" ".join(e["key"] for e in d)')"

compile_ok --source src/add.cl --output out/again.bin
expect_eq "compile after the repair: tier" compiled "$TIER"
expect_eq "compile after the repair: key" "$key" "$KEY"
cmp -s out/good.bin out/again.bin || fail "the recompiled binary differs from the original"
compile_ok --source src/add.cl
expect_eq "compile after the recompile: tier" user "$TIER"
compile_ok --source src/mul.cl
expect_eq "the untouched entry: tier" user "$TIER"

# A corrupt entry met by a lookup (no verify first) is a miss, never served.
entry2="$udir/gfx906_60.entries/${other:0:2}/$other"
printf 'garbage' | dd of="$entry2" bs=1 seek=100 conv=notrunc status=none || fail "could not corrupt $entry2"
compile_ok --source src/mul.cl --output out/mul.bin
expect_eq "lookup of a corrupt entry: tier" compiled "$TIER"
cmp -s src/mul.cl out/mul.bin || fail "a corrupt entry was served"
compile_ok --source src/mul.cl
expect_eq "lookup after the corrupt entry was recompiled: tier" user "$TIER"
run verify
expect_rc 0

# A temporary file a killed writer left: never read as an entry; verify
# reports it once it is an hour old, --repair removes it.
temp="$entry2.tmp.4242.0.17"
printf 'half an entry' >"$temp"
run verify
expect_rc 0
touch -d '2 hours ago' "$temp"
run verify
expect_rc 1
expect_contains "verify names the temporary file" "$temp" "$OUT"
run verify --repair
expect_rc 0
[[ ! -e "$temp" ]] || fail "verify --repair left $temp"
run verify
expect_rc 0
pass
