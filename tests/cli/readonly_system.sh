#!/usr/bin/env bash
# A read-only system folder: lookups work and nothing in it is created or
# modified (no -wal/-shm/-journal, no new file, same sizes and times).
# Tests may run as root, where chmod does not stop writes, so the check is
# "nothing was written", not an EACCES.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_ok --source src/add.cl --output out/compiled.bin
key="$KEY"
mkdir -p "$T/export"
run export --output "$T/export"
expect_rc 0
cp "$T/export/gfx906_60.kdb" "$T/sys/gfx906_60.kdb"
cp "$T/export/gfx906_60.kdb" "$T/sys/gfx906.kdb"
chmod a-w "$T/sys/gfx906_60.kdb" "$T/sys/gfx906.kdb" "$T/sys"
# Times with a whole second between setup and the lookups, so a write is seen
# even on a file system with coarse timestamps.
sleep 1
before="$(snapshot "$T/sys")"

export KCACHE_CUSTOM_CACHE_DIR="$T/cache2" # an empty user tier
compile_ok --source src/add.cl --output out/system.bin
expect_eq "exact database hit: tier" system "$TIER"
expect_eq "exact database hit: key" "$key" "$KEY"
cmp -s out/compiled.bin out/system.bin || fail "the system hit's binary differs from the compiled one"
compile_ok --source src/add.cl --target gfx906_64
expect_eq "arch-wide database hit: tier" system "$TIER"
compile_ok --source src/mul.cl
expect_eq "miss in the read-only system tier: tier" compiled "$TIER"
compile_ok --source src/mul.cl
expect_eq "second lookup of the miss: tier" user "$TIER"
compile_ok --source src/add.cl --target gfx1030_40
expect_eq "target with no system database: tier" compiled "$TIER"
run verify
expect_rc 0
run verify --repair
expect_rc 0
run list
expect_rc 0
run info --json
expect_rc 0
KCACHE_DISABLE_CACHE=1 "$KCACHE" compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl >/dev/null 2>&1 ||
  fail "compile with the cache disabled failed"

after="$(snapshot "$T/sys")"
if [[ "$before" != "$after" ]]; then
  fail "the read-only system folder changed (path|type|mode|size|mtime|ctime):
before:
$before
after:
$after
diff:
$(diff <(echo "$before") <(echo "$after"))"
fi
stray="$(find "$T/sys" \( -name '*-wal' -o -name '*-shm' -o -name '*-journal' -o -name '*.tmp' \))"
[[ -z "$stray" ]] || fail "expected no -wal/-shm/-journal files in the system folder, seen: $stray"
pass
