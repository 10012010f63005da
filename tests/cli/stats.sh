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

# Not where another user could write: a hit makes no folder there, and
# says nothing (a store would say why the folder is refused).
mkdir -p "$T/open"
chmod 777 "$T/open"
KCACHE_CUSTOM_CACHE_DIR="$T/open/cache" compile_ok --source src/add.cl
expect_eq "a package's kernel, the user cache in a folder others can write: tier" system "$TIER"
[[ ! -e "$T/open/cache" ]] || fail "a system hit made a user cache folder where others can write"
expect_not_contains "a system hit with an untrusted user cache folder: stderr" "Warning" "$ERR"
pass
