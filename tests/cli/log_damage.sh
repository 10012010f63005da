#!/usr/bin/env bash
# The user tier's files (<db>.ukdb, the log; <db>.ukdx, its hint), damaged
# in the ways crashes, bad disks and people damage them: every compile
# succeeds with at most one warning, naming the log. A damaged hint is
# derived data: every old kernel is still a user hit, with no warning. A
# garbage log is moved to <version>/quarantine/ and its kernels compiled
# again; a damaged record costs that kernel alone. `kcache verify` finds
# what no lookup met (exit 1) and `verify --repair` fixes it (exit 0).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
udir="$T/cache/$version"
log="$udir/gfx906_60.ukdb"
hint="$udir/gfx906_60.ukdx"

n=12
for i in $(seq 1 $n); do
  printf 'kernel void k%s(global int* a) { a[0] = %s; }\n' "$i" "$i" >"$T/src/k$i.cl"
done
# (Plain output, not --json: no python run per compile.)
plain_compile() { # SOURCE: sets RC, OUT, ERR; OUT starts with the tier
  run compile "${CP_ARGS[@]}" --target gfx906_60 --source "$1"
}
for i in $(seq 1 $n); do
  plain_compile "src/k$i.cl"
  expect_rc 0
done
cp "$log" "$T/log.good"
cp "$hint" "$T/hint.good"

damage() { # WHAT PATH
  python3 - "$1" "$2" <<'PY' || fail "could not damage $2"
import random, sys
what, path = sys.argv[1], sys.argv[2]
random.seed(what)
data = bytearray(open(path, "rb").read())
if what == "garbage":
    data = bytes(random.getrandbits(8) for _ in range(20000))
elif what == "flip-middle":
    for i in range(len(data) // 2, len(data) // 2 + 4):
        data[i] ^= 0x5A
elif what == "truncate":
    data = data[: len(data) * 2 // 3]
elif what == "cut-last-bytes":
    data = data[:-7]
open(path, "wb").write(data)
PY
}

restore() {
  rm -rf "$log" "$hint"
  cp "$T/log.good" "$log"
  cp "$T/hint.good" "$hint"
}

# all_hit NAME [WARNINGS]: compiles k1..kn, expecting user hits and no
# warning (or WARNINGS of them).
all_hit() { # NAME
  local name="$1" i warned=0
  for i in $(seq 1 $n); do
    plain_compile "src/k$i.cl"
    expect_rc 0
    [[ "$OUT" == user* ]] || fail "$name: kernel $i: expected a user hit, seen '$OUT'"
    warned=$((warned + $(warning_count "$ERR")))
  done
  expect_eq "$name: warnings" "${2:-0}" "$warned"
}

check_clean() { # NAME
  run verify --repair
  expect_rc 0
  run verify
  expect_rc 0
  all_hit "$1 (after the repair)"
  run list --json
  expect_rc 0
  expect_eq "$1: entries listed" "$n" "$(json_py "$OUT" 'len(d)')"
  [[ -f "$hint" ]] || fail "$1: no hint file after the repair"
}

# The hint, damaged every way: nothing is lost, nothing is said.
for what in garbage flip-middle truncate cut-last-bytes; do
  restore
  damage "$what" "$hint"
  all_hit "hint: $what"
  check_clean "hint: $what"
done
restore
rm -f "$hint"
all_hit "no hint at all"
check_clean "no hint at all"
restore
rm -f "$hint" && mkdir -p "$hint/inside"
all_hit "a folder where the hint goes" 1  # moved aside, said once
check_clean "a folder where the hint goes"

# The log: garbage is moved aside, with one warning naming it.
restore
damage garbage "$log"
warned=""
for i in $(seq 1 $n); do
  plain_compile "src/k$i.cl"
  expect_rc 0
  [[ "$OUT" == compiled* ]] || fail "garbage log: kernel $i: expected a compile, seen '$OUT'"
  warned+="$(warnings "$ERR")"
done
expect_contains "garbage log: the warning names the log" "$log" "$warned"
grep -q '^gfx906_60\.gfx906_60\.ukdb\.[0-9]*\.bad$' <<<"$(ls "$udir/quarantine")" ||
  fail "expected the log in quarantine/, seen: $(ls "$udir/quarantine")"
check_clean "garbage log"

# A log cut short (a disk that lost its tail): the kernels it still holds
# are hits; the others are compiled again.
restore
damage truncate "$log"
hits=0
for i in $(seq 1 $n); do
  plain_compile "src/k$i.cl"
  expect_rc 0
  [[ "$OUT" == user* ]] && hits=$((hits + 1))
done
[[ "$hits" -ge $((n / 2)) && "$hits" -lt "$n" ]] || fail "truncated log: expected most kernels to hit, seen $hits of $n"
check_clean "truncated log"

# Damage that no lookup meets (a record no one asks for): verify finds
# it and names the entry; --repair rewrites the log without it.
restore
damage flip-middle "$log"
before="$(ls "$udir/quarantine" | wc -l)"
run verify
expect_rc 1
expect_contains "verify names the damaged log" "$log" "$OUT"
expect_eq "verify without --repair moves nothing" "$before" "$(ls "$udir/quarantine" | wc -l)"
run verify --repair --json
expect_rc 0
expect_contains "verify --repair: the log" "$log" "$(json_py "$OUT" '" ".join(p["path"] for p in d["problems"] if p["repaired"])')"
run verify
expect_rc 0
run list --json
expect_eq "entries after the repair" "$((n - 1))" "$(json_py "$OUT" 'len(d)')"
pass
