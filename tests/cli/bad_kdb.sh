#!/usr/bin/env bash
# A system .kdb that is garbage, truncated, empty, a folder, or another
# kind of file: every compile succeeds (from the user tier or the
# compiler), with exactly one warning naming the file and the reason and no
# "Missing system database file"; `kcache verify` lists it and exits 1, even
# with --repair (a package is never moved or repaired); the file is left as
# it was.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# A good package, to damage.
make_good_package

check_bad_package() { # NAME: $T/sys/gfx906_60.kdb is already damaged
  local name="$1" kdb="$T/sys/gfx906_60.kdb" before i
  before="$(snapshot "$T/sys")"
  rm -rf "$T/cache2"
  for i in 1 2; do
    compile --source src/add.cl --output "out/$name.$i.bin"
    expect_rc 0
    if ((i == 1)); then expect_eq "$name: compile $i: tier" compiled "$TIER"; else expect_eq "$name: compile $i: tier" user "$TIER"; fi
    cmp -s src/add.cl "out/$name.$i.bin" || fail "$name: compile $i: --output is not the compiled binary"
    expect_eq "$name: compile $i: warnings" 1 "$(warning_count "$ERR")"
    expect_contains "$name: compile $i: the warning names the file" "$kdb" "$(warnings "$ERR")"
    expect_not_contains "$name: compile $i: no 'Missing'" "Missing system database file" "$ERR"
  done
  for repair in "" --repair; do
    run verify --json $repair
    expect_rc 1
    expect_contains "$name: verify $repair names the package" "$kdb" "$(json_py "$OUT" '" ".join(p["path"] for p in d["problems"] if not p["repaired"])')"
  done
  run verify
  expect_rc 1
  expect_contains "$name: plain verify" "problem:  $kdb" "$OUT"
  expect_eq "$name: the system folder is unchanged" "$before" "$(snapshot "$T/sys")"
  rm -rf "$kdb"
}

printf 'this is not a package' >"$T/sys/gfx906_60.kdb"
check_bad_package garbage
head -c "$(($(stat -c %s "$good") - 9))" "$good" >"$T/sys/gfx906_60.kdb"
check_bad_package truncated
: >"$T/sys/gfx906_60.kdb"
check_bad_package empty
head -c 64 "$good" >"$T/sys/gfx906_60.kdb"
check_bad_package header-only
python3 - "$good" "$T/sys/gfx906_60.kdb" <<'PY' || fail "could not zero a page"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(data) - 60, len(data) - 10):
    data[i] = 0
open(sys.argv[2], "wb").write(data)
PY
check_bad_package zeroed-index
cp "$T/cache/$(kcache_version)/gfx906_60.ukdb" "$T/sys/gfx906_60.kdb"
check_bad_package a-user-index
mkdir -p "$T/sys/gfx906_60.kdb/inside"
check_bad_package folder

# A damaged entry inside a good package: skipped and counted, the kernel
# compiled; verify names the entry.
python3 - "$good" "$T/sys/gfx906_60.kdb" <<'PY' || fail "could not flip a byte"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[64 + 100] ^= 0x20
open(sys.argv[2], "wb").write(data)
PY
rm -rf "$T/cache2"
compile --source src/add.cl --output out/entry.bin
expect_rc 0
expect_eq "damaged entry in a package: tier" compiled "$TIER"
cmp -s src/add.cl out/entry.bin || fail "a damaged package entry was served"
expect_eq "damaged entry in a package: warnings" 1 "$(warning_count "$ERR")"
expect_contains "the warning" "kcache: Warning [Integrity] Bad system cache file $T/sys/gfx906_60.kdb#$KEY" "$ERR"
run verify
expect_rc 1
expect_contains "verify names the entry" "$T/sys/gfx906_60.kdb#$KEY" "$OUT"
pass
