#!/usr/bin/env bash
# The user index (<db>.ukdb), its WAL and its shared-memory file, damaged in
# the ways crashes, bad disks and people damage them: every compile
# succeeds (hits are still hits: they never read the index), with at most
# one warning, naming the index; a damaged index is moved to
# <version>/quarantine/ with its WAL and SHM and rebuilt from the entry
# files, so `kcache list` shows every entry and `kcache verify` is clean.
# `kcache verify` finds damage a lookup does not meet (exit 1) and
# `verify --repair` fixes it (exit 0).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
udir="$T/cache/$version"
index="$udir/gfx906_60.ukdb"

sources=()
long="$(printf 'n%.0s' $(seq 1 500))"
for i in $(seq 1 36); do
  printf 'kernel void k%s(global int* a) { a[0] = %s; }\n' "$i" "$i" >"$T/src/k$i.cl"
  sources+=("src/k$i.cl")
done
# Long kernel names: an index of several pages.
# (Plain output, not --json: no python run per compile.)
plain_compile() { # SOURCE KERNEL: sets RC, OUT, ERR; OUT starts with the tier
  run compile "${CP_ARGS[@]}" --target gfx906_60 --source "$1" --kernel "$2"
}
for i in $(seq 1 36); do
  plain_compile "src/k$i.cl" "k${i}_$long"
  expect_rc 0
done
n=${#sources[@]}
[[ "$(stat -c %s "$index")" -ge 20480 ]] || fail "expected an index of several pages, seen $(stat -c %s "$index") bytes"
cp "$index" "$T/index.good"

# python3 helpers: garbage, a zeroed or a flipped page.
damage() { # WHAT PATH
  python3 - "$1" "$2" <<'PY' || fail "could not damage $2"
import os, random, sys
what, path = sys.argv[1], sys.argv[2]
random.seed(what)
if what == "garbage":
    open(path, "wb").write(bytes(random.getrandbits(8) for _ in range(20000)))
elif what == "zero-page":
    data = bytearray(open(path, "rb").read())
    data[2 * 4096:3 * 4096] = bytes(4096)
    open(path, "wb").write(data)
elif what == "flip-page":
    data = bytearray(open(path, "rb").read())
    for i in range(3 * 4096 + 8, 3 * 4096 + 48):
        data[i] ^= 0x5A
    open(path, "wb").write(data)
elif what == "truncate":
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
PY
}

new=0
check_after() { # NAME: the damage is in place; compile, list, verify
  local name="$1" i
  new=$((new + 1))
  printf 'kernel void fresh%s(global int* a) { a[0] = -%s; }\n' "$new" "$new" >"$T/src/fresh$new.cl"
  compile --source "src/fresh$new.cl" --output "out/fresh$new.bin"
  expect_rc 0
  expect_eq "$name: new kernel: tier" compiled "$TIER"
  cmp -s "src/fresh$new.cl" "out/fresh$new.bin" || fail "$name: wrong binary for the new kernel"
  [[ "$(warning_count "$ERR")" -le 1 ]] || fail "$name: expected at most one warning, seen: $(warnings "$ERR")"
  if [[ "$(warning_count "$ERR")" == 1 ]]; then
    expect_contains "$name: the warning names the index" "$index" "$(warnings "$ERR")"
  fi
  for i in 1 2 3; do
    plain_compile "src/k$i.cl" "k${i}_$long"
    expect_rc 0
    [[ "$OUT" == user* ]] || fail "$name: old kernel $i: expected a user hit, seen '$OUT'"
  done
  run verify --repair
  expect_rc 0
  run verify
  expect_rc 0
  run list --json
  expect_rc 0
  expect_eq "$name: entries listed" "$((n + new))" "$(json_py "$OUT" 'len(d)')"
  for f in "$index" "$index-wal" "$index-shm" "$index-journal"; do
    [[ ! -e "$f" || -f "$f" ]] || fail "$name: $f is left as something other than a file"
  done
}

damage garbage "$index"
printf 'not a WAL at all' >"$index-wal"
damage garbage "$index-shm"
check_after "garbage index, WAL and SHM"
q="$(ls "$udir/quarantine")"
grep -q '^gfx906_60\.gfx906_60\.ukdb\.[0-9]*\.bad$' <<<"$q" || fail "expected the index in quarantine/, seen: $q"
grep -q '^gfx906_60\.gfx906_60\.ukdb-wal\.[0-9]*\.bad$' <<<"$q" || fail "expected the WAL in quarantine/, seen: $q"

damage truncate "$index"
check_after "truncated index"

: >"$index"
check_after "empty index"

damage zero-page "$index"
check_after "zeroed index page"

rm -f "$index-wal" && mkdir -p "$index-wal/inside"
check_after "a folder where the WAL goes"

rm -f "$index-shm" && mkdir -p "$index-shm/inside"
check_after "a folder where the SHM goes"

rm -f "$index" && mkdir -p "$index/inside"
check_after "a folder where the index goes"

damage garbage "$index-wal"
check_after "garbage WAL beside a good index"

rm -f "$index"
check_after "no index at all"

# Damage that no lookup meets: verify finds it, --repair rebuilds.
cp "$T/index.good" "$index"
rm -f "$index-wal" "$index-shm"
damage flip-page "$index"
before="$(ls "$udir/quarantine" | wc -l)"
run verify
expect_rc 1
expect_contains "verify names the damaged index" "$index" "$OUT"
expect_eq "verify without --repair moves nothing" "$before" "$(ls "$udir/quarantine" | wc -l)"
run verify --repair --json
expect_rc 0
expect_contains "verify --repair: the index" "$index" "$(json_py "$OUT" '" ".join(p["path"] for p in d["problems"] if p["repaired"])')"
run verify
expect_rc 0
run list --json
expect_eq "entries after the repair" "$((n + new))" "$(json_py "$OUT" 'len(d)')"
pass
