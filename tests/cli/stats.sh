#!/usr/bin/env bash
# kcache stats: the counts of every process on the cache folder (hits by
# tier, compiles, time spent and saved, bytes), as a table, JSON or
# Prometheus text; --zero; what the user tier holds.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

run stats
expect_rc 0
expect_contains "stats of a new cache" "no counts yet" "$OUT"
run stats --json
expect_rc 0
expect_eq "stats --json of a new cache: counted" false "$(json_get "$OUT" counted)"
expect_eq "stats --json of a new cache: entries" 0 "$(json_get "$OUT" entries)"

# Three processes compile two kernels and hit them: every count adds up.
compile_ok --source src/add.cl
compile_ok --source src/mul.cl
compile_ok --source src/add.cl
expect_eq "the third compile hits" user "$TIER"
run stats --json
expect_rc 0
expect_eq "stats: counted" true "$(json_get "$OUT" counted)"
expect_eq "stats: requests of all processes" 3 "$(json_get "$OUT" counts.requests)"
expect_eq "stats: compiles" 2 "$(json_get "$OUT" counts.compiles)"
expect_eq "stats: user hits" 1 "$(json_get "$OUT" counts.user_hits)"
expect_eq "stats: bytes served" "$(stat -c %s src/add.cl)" "$(json_get "$OUT" counts.bytes_served)"
expect_eq "stats: time saved is counted" true "$(json_py "$OUT" 'd["counts"]["compile_micros_saved"] > 0')"
expect_eq "stats: time spent is counted" true "$(json_py "$OUT" 'd["counts"]["compile_micros"] > 0')"
expect_eq "stats: entries held" 2 "$(json_get "$OUT" entries)"
expect_eq "stats: databases" 1 "$(json_get "$OUT" databases)"
expect_eq "stats: max_size" $((4 << 30)) "$(json_get "$OUT" max_size)"

run stats
expect_rc 0
expect_contains "stats table: requests" "requests          3" "$OUT"
expect_contains "stats table: hits by tier" "1 (33.3%): memory 0, system 0, user 1" "$OUT"
expect_contains "stats table: what it holds" "2 entries" "$OUT"
expect_contains "stats table: requests compiled without the cache" "uncached          0 (0.0%)" "$OUT"

# Prometheus text: every sample typed before it, one value each, # EOF last.
run stats --prometheus
expect_rc 0
python3 - "$OUT" <<'PY' || fail "stats --prometheus is not well-formed Prometheus text"
import re, sys
lines = sys.argv[1].split("\n")
assert lines[-1] == "# EOF", lines[-1]
typed = {}
for line in lines[:-1]:
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ")
        assert kind in ("counter", "gauge"), line
        assert kind != "counter" or name.endswith("_total"), line
        typed[name] = kind
    elif line.startswith("# HELP "):
        continue
    else:
        m = re.fullmatch(r'([a-z_]+)\{cache_dir="[^"]*"\} ([0-9]+)', line)
        assert m, line
        assert m.group(1) in typed, "untyped sample " + line
PY
checked "stats --prometheus is well-formed"
expect_contains "prometheus: requests" "kcache_requests_total{cache_dir=\"$T/cache/" "$OUT"
expect_contains "prometheus: entries gauge" "# TYPE kcache_entries gauge" "$OUT"

run stats --zero
expect_rc 0
expect_contains "stats --zero says so" "zeroed the counts" "$OUT"
run stats --json
expect_eq "after --zero: requests" 0 "$(json_get "$OUT" counts.requests)"
expect_eq "after --zero: entries stay" 2 "$(json_get "$OUT" entries)"
compile_ok --source src/mul.cl
run stats --json
expect_eq "counting goes on after --zero" 1 "$(json_get "$OUT" counts.user_hits)"

run stats --json --prometheus
expect_rc 2
KCACHE_DISABLE_CACHE=1 run stats
expect_rc 1
expect_contains "stats with the cache off" "disabled" "$ERR"

# A process served by packages alone is counted too: its first hit makes
# the user cache's folder, as a store would (design.md §8).
mkdir -p "$T/export"
run export --output "$T/export"
expect_rc 0
cp "$T/export/"*.kdb "$T/sys/"
rm -rf "$T/cache"
compile_ok --source src/add.cl
expect_eq "a kernel of the installed package: tier" system "$TIER"
compile_ok --source src/mul.cl
expect_eq "the other kernel of the package: tier" system "$TIER"
run stats --json
expect_rc 0
expect_eq "stats after system hits alone: counted" true "$(json_get "$OUT" counted)"
expect_eq "stats after system hits alone: system hits" 2 "$(json_get "$OUT" counts.system_hits)"
expect_eq "stats after system hits alone: compiles" 0 "$(json_get "$OUT" counts.compiles)"
expect_eq "stats after system hits alone: entries (none stored)" 0 "$(json_get "$OUT" entries)"

# Whatever stands where kcache.stats belongs (a folder, a FIFO, a link,
# counts no process could have made) is set aside in quarantine/ by the
# next kcache to open the cache, `stats` and `stats --zero` included, with
# one warning; it is never opened nor followed, and the counts start again
# (stats and stats --zero failed until someone removed it, or printed a
# count of 18446744073709551615).
version="$(kcache_version)"
export KCACHE_CUSTOM_CACHE_DIR="$T/odd"
udir="$T/odd/$version"
printf 'kernel void sub(global int* a) { a[get_global_id(0)] -= 1; }\n' >"$T/src/sub.cl"
compile_ok --source src/sub.cl
printf 'elsewhere\n' >"$T/elsewhere"
# put_in_place WHAT: WHAT where kcache.stats belongs.
put_in_place() {
  case "$1" in
    folder) rm -f "$udir/kcache.stats" && mkdir "$udir/kcache.stats" ;;
    fifo) rm -f "$udir/kcache.stats" && mkfifo "$udir/kcache.stats" ;;
    link) rm -f "$udir/kcache.stats" && ln -s "$T/elsewhere" "$udir/kcache.stats" ;;
    crafted)
      python3 - "$udir/kcache.stats" <<'PY' || fail "could not craft the counts"
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[64:72] = b"\xff" * 8  # shard 0's requests: 2^64 - 1
open(path, "wb").write(data)
PY
      ;;
  esac
}
declare -A said=([folder]="it is a folder, not a kcache stats file"
  [fifo]="it is not a regular file (a FIFO, socket or device), not a kcache stats file"
  [link]="it is a symbolic link (not followed), not a kcache stats file"
  [crafted]="it holds counts no process could have made (requests 18446744073709551615)")
for what in folder fifo link crafted; do
  for command in stats "stats --zero"; do
    put_in_place "$what"
    # shellcheck disable=SC2086
    run $command
    expect_rc 0
    expect_contains "$command, $what in its place: said" "kcache: Warning [Integrity] Bad user cache file $udir/kcache.stats (${said[$what]}" "$ERR"
    expect_contains "$command, $what in its place: set aside" "it is set aside in quarantine/ and a new one made (the counts start again)" "$ERR"
    expect_not_contains "$command, $what in its place: no count of 2^64 - 1" "18446744073709551615" "$OUT"
    [[ -f "$udir/kcache.stats" && ! -L "$udir/kcache.stats" ]] || fail "$command made no stats file in place of a $what"
  done
  run stats --json
  expect_eq "after a $what in its place: counted" true "$(json_get "$OUT" counted)"
  expect_eq "after a $what in its place: what the cache holds" 1 "$(json_get "$OUT" entries)"
done
expect_eq "what stood there is kept" 8 "$(find "$udir/quarantine" -maxdepth 1 -name 'kcache.stats.*.bad' | wc -l | tr -d ' ')"
expect_eq "the link's target is untouched" elsewhere "$(cat "$T/elsewhere")"

# Where it cannot be set aside (a folder this user cannot write), stats
# says why it shows no counts, rather than fail or show counts of 0.
if [[ "$(id -u)" == 0 ]]; then
  command -v setpriv >/dev/null || skip "setpriv is needed to run kcache as another user"
  chmod -R a+rX "$T"
  as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups "$KCACHE")
else
  as_reader=("$KCACHE")
fi
put_in_place folder
[[ "$(id -u)" == 0 ]] || chmod a-w "$udir"
"${as_reader[@]}" stats >"$T/tmp/out" 2>"$T/tmp/err"
RC=$? OUT="$(cat "$T/tmp/out")" ERR="$(cat "$T/tmp/err")" LAST_CMD="kcache stats (read-only)"
expect_rc 0
expect_contains "stats where it cannot be set aside: why" "kcache: Warning [Integrity] The counts cannot be shown: $udir/kcache.stats is a folder, not a kcache stats file" "$ERR"
expect_contains "stats where it cannot be set aside: no counts" "no counts to show" "$OUT"
expect_not_contains "stats where it cannot be set aside: no counts of 0" "requests" "$OUT"
"${as_reader[@]}" stats --json >"$T/tmp/out" 2>"$T/tmp/err"
RC=$? OUT="$(cat "$T/tmp/out")" ERR="$(cat "$T/tmp/err")" LAST_CMD="kcache stats --json (read-only)"
expect_rc 0
expect_eq "stats --json where it cannot be set aside: counted" false "$(json_get "$OUT" counted)"
expect_contains "stats --json where it cannot be set aside: why" "is a folder" "$(json_get "$OUT" counts_problem)"
"${as_reader[@]}" stats --prometheus >"$T/tmp/out" 2>"$T/tmp/err"
RC=$? OUT="$(cat "$T/tmp/out")" ERR="$(cat "$T/tmp/err")" LAST_CMD="kcache stats --prometheus (read-only)"
expect_rc 0
expect_not_contains "stats --prometheus where it cannot be set aside: no counts" "kcache_requests_total" "$OUT"
expect_contains "stats --prometheus where it cannot be set aside: what the cache holds" "kcache_entries{" "$OUT"
[[ "$(id -u)" == 0 ]] || chmod u+w "$udir"
rmdir "$udir/kcache.stats"

# A lock file that is not one stopped every process sharing its counts,
# silently: a program sets it aside, says so, and counts.
rm -f "$udir/kcache.stats" "$udir/kcache.stats.lock"
mkdir "$udir/kcache.stats.lock"
compile_ok --source src/add.cl
expect_contains "a folder as the stats lock: said" "Bad user cache file $udir/kcache.stats.lock (it is a folder, not a lock file)" "$ERR"
run stats --json
expect_eq "a folder as the stats lock: counted" true "$(json_get "$OUT" counted)"
expect_eq "a folder as the stats lock: the program's request" 1 "$(json_get "$OUT" counts.requests)"
export KCACHE_CUSTOM_CACHE_DIR="$T/cache"

# Not where another user could write: a hit makes no folder there, and
# says nothing (a store would say why the folder is refused).
mkdir -p "$T/open"
chmod 777 "$T/open"
KCACHE_CUSTOM_CACHE_DIR="$T/open/cache" compile_ok --source src/add.cl
expect_eq "a package's kernel, the user cache in a folder others can write: tier" system "$TIER"
[[ ! -e "$T/open/cache" ]] || fail "a system hit made a user cache folder where others can write"
expect_not_contains "a system hit with an untrusted user cache folder: stderr" "Warning" "$ERR"
pass
