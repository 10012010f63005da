#!/usr/bin/env bash
# Two libraries' packages for one target (design.md §3.6): drop-ins in
# <db>.kdb.d/<name>.kdb beside <db>.kdb. kcache install --name puts a
# package there; the system tier serves every package's kernels, with no
# warning for the package of another library; info lists the drop-ins,
# verify checks them.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

make_good_package                    # add.cl, command backend, gfx906_60
printf 'kernel void sub(global int* a) { a[get_global_id(0)] -= 1; }\n' >"$T/src/sub.cl"
compile_ok --source src/sub.cl --output out/sub.bin
export_package "$T/export2"
other="$EXPORTED"

run install "$good" --name liba
expect_rc 0
expect_contains "install --name says where" "installed $T/sys/gfx906_60.kdb.d/liba.kdb (1 kernel)" "$OUT"
run install "$other" --name libb.kdb
expect_rc 0
expect_contains "a name given with .kdb" "installed $T/sys/gfx906_60.kdb.d/libb.kdb" "$OUT"
[[ ! -e "$T/sys/gfx906_60.kdb" ]] || fail "install --name also wrote gfx906_60.kdb"
expect_eq "the drop-in folder's mode" 755 "$(stat -c %a "$T/sys/gfx906_60.kdb.d")"

export KCACHE_CUSTOM_CACHE_DIR="$T/fresh"
compile_ok --source src/add.cl --output out/add-served.bin
expect_eq "liba's kernel: tier" system "$TIER"
cmp -s out/compiled.bin out/add-served.bin || fail "liba's kernel differs"
compile_ok --source src/sub.cl --output out/sub-served.bin
expect_eq "libb's kernel: tier" system "$TIER"
cmp -s out/sub.bin out/sub-served.bin || fail "libb's kernel differs"
expect_eq "no warning with both libraries' packages" "" "$ERR"

run info
expect_contains "info lists liba's drop-in" "gfx906_60.kdb.d/liba.kdb: 1 kernel" "$OUT"
expect_contains "info lists libb's drop-in" "gfx906_60.kdb.d/libb.kdb: 1 kernel" "$OUT"
run info --json
python3 - "$OUT" <<'PY' || fail "kcache info --json packages: $OUT"
import json, sys
packages = json.loads(sys.argv[1])["packages"]
assert [p["path"].split("/sys/")[1] for p in packages] == ["gfx906_60.kdb.d/liba.kdb", "gfx906_60.kdb.d/libb.kdb"], packages
assert all(p["db"] == "gfx906_60" and p["applies"] for p in packages), packages
PY
run verify
expect_rc 0
run verify "$T/sys/gfx906_60.kdb.d/liba.kdb"
expect_rc 0
expect_contains "verify of a drop-in" "liba.kdb: ok, 1 kernel" "$OUT"

# <db>.kdb beside its drop-ins is asked first, and listed first.
run install "$good"
expect_rc 0
compile_ok --source src/add.cl --output out/add-again.bin
expect_eq "with gfx906_60.kdb too: tier" system "$TIER"
run info
expect_contains "the package before its drop-ins" "  gfx906_60.kdb: 1 kernel, may apply: not checked for command (its targets are its command's own)
  gfx906_60.kdb.d/liba.kdb" "$OUT"

# A drop-in in another database's folder is never used: verify says so.
mkdir -p "$T/sys/gfx90a.kdb.d"
cp "$good" "$T/sys/gfx90a.kdb.d/moved.kdb"
run verify
expect_rc 1
expect_contains "verify names the moved drop-in" "$T/sys/gfx90a.kdb.d/moved.kdb" "$OUT$ERR"
expect_contains "and its summary counts the problem" "; 1 problem (above)" "$OUT"
expect_contains "and why" "holds kernels for gfx906_60, not gfx90a" "$OUT$ERR"
run verify "$T/sys/gfx90a.kdb.d/moved.kdb"
expect_rc 1
rm -r "$T/sys/gfx90a.kdb.d"

# One drop-in name holds one package a database: two of one database
# under one --name is a usage error (the second replaced the first).
run install "$good" "$other" --name both
expect_rc 2
expect_contains "two packages, one name" "are both packages of gfx906_60, and one drop-in name holds one" "$ERR"
[[ ! -e "$T/sys/gfx906_60.kdb.d/both.kdb" ]] || fail "install --name both installed one of two"
# Nor does <db>.kdb: without --name the second silently replaced the first.
before="$(cksum <"$T/sys/gfx906_60.kdb" 2>/dev/null || echo none)"
run install "$good" "$other"
expect_rc 2
expect_contains "two packages, one db file" "are both packages of gfx906_60, and gfx906_60.kdb holds one" "$ERR"
expect_eq "install of two packages of one db installed nothing" "$before" \
  "$(cksum <"$T/sys/gfx906_60.kdb" 2>/dev/null || echo none)"

# A drop-in folder whose packages cannot be listed: info names it.
mkdir -p "$T/sys2"
printf 'not a folder' >"$T/sys2/gfx90a.kdb.d"
KCACHE_SYSTEM_DB_PATH="$T/sys2" run info
expect_contains "info names a drop-in folder that is not one" "gfx90a.kdb.d: does not apply: a drop-in folder that is not a folder" "$OUT"
KCACHE_SYSTEM_DB_PATH="$T/sys2" run info --json
python3 - "$OUT" <<'PY' || fail "info --json of a drop-in folder that is not one: $OUT"
import json, sys
(one,) = json.loads(sys.argv[1])["packages"]
assert one["db"] == "gfx90a" and one["applies"] is False and "not a folder" in one["why_not"], one
PY

# A drop-in's name is a plain file name.
for bad in .hidden a/b "" "x y" -rf "$(printf 'n%.0s' {1..201})"; do
  run install "$good" --name "$bad"
  expect_rc 2
done
expect_eq "nothing else was installed" "liba.kdb libb.kdb" "$(ls "$T/sys/gfx906_60.kdb.d" | tr '\n' ' ' | sed 's/ $//')"
# Installed again under a name in use: said, since it replaces that one.
run install "$good" --name liba
expect_rc 0
expect_contains "a replaced package is said" "liba.kdb (1 kernel; it replaces the package that was there)" "$OUT"

# Past the 64 drop-ins the tier uses (in name order): install, info and
# verify say so (an audit's 65th was installed with exit 0, "may apply"
# and verified clean, yet never used).
mkdir -p "$T/sys3/gfx906_60.kdb.d"
for i in $(seq -w 1 64); do cp "$other" "$T/sys3/gfx906_60.kdb.d/p$i.kdb"; done
export KCACHE_SYSTEM_DB_PATH="$T/sys3"
run install "$good" --name zz
expect_rc 1
expect_contains "install past 64" "the system tier will not use $T/sys3/gfx906_60.kdb.d/zz.kdb: the system tier uses the first 64 drop-ins of gfx906_60 in name order" "$ERR"
run info
expect_contains "info past 64" "gfx906_60.kdb.d/zz.kdb: does not apply: the system tier uses the first 64 drop-ins" "$OUT"
expect_not_contains "info: the 64th is used" "p64.kdb: does not apply" "$OUT"
run verify
expect_rc 1
expect_contains "verify past 64" "$T/sys3/gfx906_60.kdb.d/zz.kdb" "$OUT$ERR"
run install "$good" --name a0
expect_rc 0

# Only packages take one of the 64 places: a FIFO, a folder and a link
# named as drop-ins are said (never opened), and the 64th package is used
# (they were counted: "holds 67 packages", and it was not).
mkdir -p "$T/sys4/gfx906_60.kdb.d/a-folder.kdb"
mkfifo "$T/sys4/gfx906_60.kdb.d/a-fifo.kdb"
ln -s "$other" "$T/sys4/gfx906_60.kdb.d/a-link.kdb"
for i in $(seq -w 1 63); do cp "$other" "$T/sys4/gfx906_60.kdb.d/p$i.kdb"; done
export KCACHE_SYSTEM_DB_PATH="$T/sys4"
run install "$good" --name zz
expect_rc 0
compile_ok --source src/add.cl
expect_eq "the 64th package is served" system "$TIER"
expect_not_contains "no more packages than the tier uses" "packages; the first 64" "$ERR"
for what in "a-folder.kdb is not used: it is a folder, not a package file" \
  "a-fifo.kdb is not used: it is not a regular file" \
  "a-link.kdb is not used: it is a symbolic link, which is not followed"; do
  expect_contains "the tier says what is not a package" "$T/sys4/gfx906_60.kdb.d/$what" "$ERR"
done
run info
expect_contains "info: a folder is not a package" "gfx906_60.kdb.d/a-folder.kdb: does not apply: a folder, not a package file" "$OUT"
expect_contains "info: a FIFO is not a package" "gfx906_60.kdb.d/a-fifo.kdb: does not apply: not a regular file" "$OUT"
expect_contains "info: a link is not followed" "gfx906_60.kdb.d/a-link.kdb: does not apply: a symbolic link" "$OUT"
expect_not_contains "info: the 64th package applies" "zz.kdb: does not apply" "$OUT"
run verify
expect_rc 1
expect_contains "verify names the FIFO" "$T/sys4/gfx906_60.kdb.d/a-fifo.kdb: not used: not a regular file" "$OUT"
expect_not_contains "verify: the 64th package is used" "zz.kdb: not used" "$OUT"
unset KCACHE_SYSTEM_DB_PATH
echo "PASS [$TEST_NAME]"
