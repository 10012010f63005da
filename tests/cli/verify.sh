#!/usr/bin/env bash
# kcache verify finds a corrupt entry (exit 1, names it); verify --repair
# copies it to <dir>/<version>/quarantine/ and rewrites the log without it
# (exit 0); the next compile of that request recompiles. A stale temporary
# file is reported and removed. (Other damage to the log and its hint:
# log_damage.sh; damaged .kdb files: bad_kdb.sh.)
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
log="$udir/gfx906_60.ukdb"
has_entry "$udir" gfx906_60 "$key" || fail "expected $key in $log; seen: $(find "$udir")"

run verify
expect_rc 0
run verify --json
expect_rc 0
expect_eq "verify --json: ok" true "$(json_get "$OUT" ok)"
expect_eq "verify --json: entries_checked" 2 "$(json_get "$OUT" entries_checked)"
expect_eq "verify --json: entries_ok" 2 "$(json_get "$OUT" entries_ok)"

# damage_entry KEY: flips one byte in the middle of KEY's record in the log.
damage_entry() {
  python3 - "$log" "$1" <<'PY' || fail "could not damage $1 in $log"
import struct, sys
path, key = sys.argv[1], bytes.fromhex(sys.argv[2])
data = bytearray(open(path, "rb").read())
at, found = 64, None
while at + 88 <= len(data) and data[at:at + 4] == b"KCEN":
    m, t, s = struct.unpack_from("<III", data, at + 48)
    size = 88 + m + t + s
    if data[at + 16:at + 32] == key:
        found = (at, size)
    at += (size + 7) // 8 * 8
assert found, "no record of that key"
data[found[0] + found[1] // 2] ^= 0x5A
open(path, "wb").write(data)
PY
}
damage_entry "$key"

run verify
expect_rc 1
expect_contains "kcache verify names the corrupt entry" "$key" "$OUT"
expect_not_contains "kcache verify does not name the good entry" "$other" "$OUT"
run verify --json
expect_rc 1
expect_eq "verify --json: ok" false "$(json_get "$OUT" ok)"
expect_eq "verify --json: problems" 1 "$(json_py "$OUT" 'len(d["problems"])')"
expect_contains "verify --json: the problem's path" "$log" "$(json_get "$OUT" problems.0.path)"
expect_contains "verify --json: the problem names the entry" "$key" "$(json_get "$OUT" problems.0.problem)"
expect_eq "verify --json: repaired" false "$(json_get "$OUT" problems.0.repaired)"
[[ ! -e "$udir/quarantine" ]] || fail "verify without --repair changed something: $(ls "$udir/quarantine")"

run verify --repair
expect_rc 0
expect_contains "kcache verify --repair names the entry" "$key" "$OUT"
! has_entry "$udir" gfx906_60 "$key" || fail "verify --repair left the corrupt entry in $log"
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
damage_entry "$other"
compile_ok --source src/mul.cl --output out/mul.bin
expect_eq "lookup of a corrupt entry: tier" compiled "$TIER"
cmp -s src/mul.cl out/mul.bin || fail "a corrupt entry was served"
compile_ok --source src/mul.cl
expect_eq "lookup after the corrupt entry was recompiled: tier" user "$TIER"
run verify
expect_rc 0

# A temporary file a killed writer left: never read as an entry; verify
# reports it once it is an hour old, --repair removes it.
temp="$log.tmp.4242.0.17"
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

# A cache this user cannot write (as another user, when run as root, or
# made read-only): its entries are checked as they are, and what cannot
# be repaired there is not offered a repair. It said "cannot open lock
# file", "0 of 0 entries ok", then "run 'kcache verify --repair' to fix".
export KCACHE_CUSTOM_CACHE_DIR="$T/ro-cache"
compile_ok --source src/add.cl
compile_ok --source src/mul.cl
ro_key="$KEY"
ro_dir="$T/ro-cache/$version"
as_reader=("$KCACHE")
if [[ "$(id -u)" == 0 ]]; then
  command -v setpriv >/dev/null || skip "setpriv is needed to run kcache as another user"
  chmod -R a+rX "$T"
  as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups "$KCACHE")
else
  chmod -R a-w "$ro_dir"
fi
run_reader() {
  LAST_CMD="${as_reader[*]} $*"
  "${as_reader[@]}" "$@" >"$T/tmp/.out" 2>"$T/tmp/.err"
  RC=$?
  OUT="$(cat "$T/tmp/.out")" ERR="$(cat "$T/tmp/.err")"
}
run_reader verify
expect_rc 0
expect_contains "verify of a read-only cache: every entry checked" "2 of 2 entries ok in 1 database" "$OUT"
expect_not_contains "verify of a read-only cache: no lock" "lock file" "$OUT$ERR"
[[ "$(id -u)" == 0 ]] || chmod u+w "$ro_dir/gfx906_60.ukdb"
log="$ro_dir/gfx906_60.ukdb" damage_entry "$ro_key"
[[ "$(id -u)" == 0 ]] || chmod a-w "$ro_dir/gfx906_60.ukdb"
run_reader verify
expect_rc 1
expect_contains "verify of a read-only cache: the damage" "$ro_key" "$OUT"
expect_contains "verify of a read-only cache: why not repaired" "the user cache $ro_dir is read-only here, so they cannot be repaired" "$OUT"
expect_not_contains "verify of a read-only cache: no repair offered" "verify --repair" "$OUT"
run_reader verify --json
expect_rc 1
expect_contains "verify --json of a read-only cache" "is read-only here" "$(json_get "$OUT" cannot_repair)"
[[ "$(id -u)" == 0 ]] || chmod -R u+w "$ro_dir"
run verify --repair
expect_rc 0
export KCACHE_CUSTOM_CACHE_DIR="$T/cache"

# A package the system tier never uses is a problem in the system folder:
# one holding another database's kernels (renamed). Outside it, a
# package's file name is not its own (install names it).
make_good_package
cp "$good" "$T/sys/gfx90a.kdb"
run verify
expect_rc 1
expect_contains "verify: a renamed package" "$T/sys/gfx90a.kdb: not used: it holds kernels for gfx906_60, not gfx90a" "$OUT"
run verify "$T/sys/gfx90a.kdb"
expect_rc 1
expect_contains "verify PKG: a renamed package" "the system tier would not use it: it holds kernels for gfx906_60, not gfx90a" "$OUT"
cp "$good" "$T/export/any-name.kdb"
run verify "$T/export/any-name.kdb"
expect_rc 0
rm "$T/sys/gfx90a.kdb"
cp "$good" "$T/sys/gfx906_60.kdb"
run verify
expect_rc 0
run verify "$T/sys/gfx906_60.kdb"
expect_rc 0

# A file name in the system folder is anyone's words where others may
# write it: its control characters are shown escaped, never written.
cp "$good" "$T/sys/x$(printf '\033')[2J.kdb"
run verify
expect_rc 1
expect_contains "the name escaped" 'x\x1b[2J.kdb' "$OUT"
[[ "$OUT$ERR" != *$'\e'* ]] || fail "verify wrote a raw escape character: $OUT"
rm "$T/sys/x"*
pass
