#!/usr/bin/env bash
# The system tier is looked up before the user tier: entries exported with
# `kcache export` into the system folder are reported as tier "system" even
# though the user tier has them too. <arch>_<units>.kdb is tried first, then
# the arch-wide <arch>.kdb.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

compile_ok --source src/add.cl --output out/compiled.bin
expect_eq "first compile: tier" compiled "$TIER"
key="$KEY"
compile_ok --source src/add.cl
expect_eq "second compile: tier" user "$TIER"

mkdir -p "$T/export"
run export --output "$T/export"
expect_rc 0
[[ -s "$T/export/gfx906_60.kdb" ]] || fail "kcache export --output $T/export: expected $T/export/gfx906_60.kdb; seen: $(ls -la "$T/export")"
cp "$T/export/gfx906_60.kdb" "$T/sys/gfx906_60.kdb"

compile_ok --source src/add.cl --output out/system.bin
expect_eq "compile with gfx906_60.kdb in the system folder: tier" system "$TIER"
expect_eq "key of the system hit" "$key" "$KEY"
expect_eq "db of the system hit" gfx906_60 "$DB"
cmp -s out/compiled.bin out/system.bin || fail "the system hit's binary differs from the compiled one"
expect_not_contains "stderr of a system hit" "Missing system database" "$ERR"
[[ -n "$(entry_keys "$T/cache")" ]] || fail "the user tier lost its entry"

# Only the arch-wide database: still found.
mv "$T/sys/gfx906_60.kdb" "$T/sys/gfx906.kdb"
compile_ok --source src/add.cl --output out/arch.bin
expect_eq "compile with only gfx906.kdb in the system folder: tier" system "$TIER"
expect_eq "key of the arch-wide hit" "$key" "$KEY"
cmp -s out/compiled.bin out/arch.bin || fail "the arch-wide hit's binary differs from the compiled one"

# Another unit count of the same arch is served by gfx906.kdb too.
compile_ok --source src/add.cl --target gfx906_64
expect_eq "compile for gfx906_64 with gfx906.kdb: tier" system "$TIER"
expect_eq "key for gfx906_64 (units are not in the key)" "$key" "$KEY"
expect_eq "db for gfx906_64" gfx906_64 "$DB"

# A request the system database does not hold falls through to compile.
compile_ok --source src/mul.cl
expect_eq "a request not in the system database: tier" compiled "$TIER"

# The exact database wins over the arch-wide one: an exact gfx906_60.kdb made
# from another request, and gfx906.kdb holding add.cl.
KCACHE_CUSTOM_CACHE_DIR="$T/cache2" "$KCACHE" compile "${CP_ARGS[@]}" --target gfx906_60 --source src/mul.cl >/dev/null 2>&1 ||
  fail "compile of mul.cl into $T/cache2 failed"
KCACHE_CUSTOM_CACHE_DIR="$T/cache2" "$KCACHE" export --db gfx906_60 --output "$T/sys/gfx906_60.kdb" >/dev/null 2>&1 ||
  fail "kcache export --db gfx906_60 --output $T/sys/gfx906_60.kdb failed"
[[ -s "$T/sys/gfx906_60.kdb" ]] || fail "kcache export --db gfx906_60 --output FILE did not write FILE"
export KCACHE_CUSTOM_CACHE_DIR="$T/cache3" # an empty user tier
compile_ok --source src/mul.cl
expect_eq "mul.cl with gfx906_60.kdb holding it: tier" system "$TIER"
compile_ok --source src/add.cl
expect_eq "add.cl, only in gfx906.kdb, with gfx906_60.kdb present: tier" system "$TIER"

# Without the system databases, the user tier answers again.
rm -f "$T/sys/"*.kdb
export KCACHE_CUSTOM_CACHE_DIR="$T/cache"
compile_ok --source src/add.cl
expect_eq "after removing the system databases: tier" user "$TIER"
pass
