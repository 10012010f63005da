#!/usr/bin/env bash
# Size limits: kcache prune evicts the entries used longest ago and gives
# their space back; a compile that takes the cache past KCACHE_MAX_SIZE
# evicts in the background; bad limits are refused, naming the option or
# the variable.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# cache_bytes: bytes of the user tier's files (logs, hints, use tables).
cache_bytes() {
  find "$T/cache" -type f \( -name '*.ukdb' -o -name '*.ukdx' -o -name '*.ukdu' \) -printf '%s\n' |
    awk '{s += $1} END {print s + 0}'
}
# make_source N: a 20 KiB source of its own.
make_source() {
  python3 -c "import sys; sys.stdout.write(('// kernel $1 ' + 'x' * 60 + '\n') * 320)" >"$T/src/k$1.cl"
}

run prune
expect_rc 0
expect_contains "prune of a cache never written" "0 entries evicted" "$OUT"
expect_eq "prune makes no cache folder" "" "$(ls "$T/cache" 2>/dev/null)"

for i in 1 2 3 4 5 6; do
  make_source "$i"
  compile_ok --source "src/k$i.cl"
done
run prune --json
expect_rc 0
expect_eq "prune within the default limit: evicted" 0 "$(json_get "$OUT" evicted)"
expect_eq "prune within the default limit: entries" 6 "$(json_get "$OUT" entries_after)"
expect_eq "the default size limit is 4 GiB" $((4 << 30)) "$(json_get "$OUT" max_size)"
expect_eq "prune --json: bytes_after is what is on disk" "$(cache_bytes)" "$(json_get "$OUT" bytes_after)"

# Past --max-entries: the first written go (none was used since), down to 90%.
run prune --max-entries 4 --json
expect_rc 0
expect_eq "prune --max-entries 4: evicted" 2 "$(json_get "$OUT" evicted)"
expect_eq "prune --max-entries 4: left" 4 "$(json_get "$OUT" entries_after)"
compile_ok --source src/k6.cl
expect_eq "the newest entry stays" user "$TIER"
compile_ok --source src/k1.cl
expect_eq "the oldest entry went" compiled "$TIER"

before="$(cache_bytes)"
run prune --max-size 1
expect_rc 0
expect_contains "prune --max-size 1 says what it did" "entries evicted" "$OUT"
expect_contains "prune --max-size 1 names the limit" "size 1 B" "$OUT"
run list
expect_contains "prune --max-size 1 leaves nothing" "0 entries" "$OUT"
after="$(cache_bytes)"
((after < before / 4)) || fail "prune --max-size 1: $before bytes before, $after after"
checked "prune --max-size 1 gave the space back ($before -> $after bytes)"

# Bad limits are usage errors that name the option.
for bad in "--max-size abc" "--max-size -5" "--max-size 1Q" "--max-entries 1.5" \
  "--max-entries -1" "--max-age 3x" "--max-age -1d"; do
  # shellcheck disable=SC2086
  run prune $bad
  expect_rc 2
  expect_contains "prune $bad names the option" "${bad%% *}" "$ERR"
done

# A bad variable is reported once, naming it, and the default is used.
KCACHE_MAX_SIZE=abc run info --json
expect_rc 0
expect_contains "KCACHE_MAX_SIZE=abc is reported" "KCACHE_MAX_SIZE='abc'" "$ERR"
expect_eq "KCACHE_MAX_SIZE=abc: the default" 4G "$(setting "$OUT" max_size value)"
for var in KCACHE_MAX_ENTRIES KCACHE_MAX_AGE; do
  env "$var=-3" "$KCACHE" info --json >"$T/out/info.json" 2>"$T/out/info.err"
  expect_contains "$var=-3 is reported" "$var='-3'" "$(cat "$T/out/info.err")"
done
KCACHE_MAX_AGE=30d run info --json
expect_eq "KCACHE_MAX_AGE=30d is taken" 30d "$(setting "$OUT" max_age value)"

# A compile past KCACHE_MAX_SIZE evicts in the background, before the
# process ends: the cache never stays past the limit.
limit=$((100 * 1024))
for i in $(seq 10 29); do
  make_source "$i"
  KCACHE_MAX_SIZE=100K compile_ok --source "src/k$i.cl"
  size="$(cache_bytes)"
  ((size <= limit)) || fail "after compile $i the cache holds $size bytes, past KCACHE_MAX_SIZE=100K"
done
checked "20 compiles of 20 KiB kernels kept the cache within 100 KiB"
KCACHE_MAX_SIZE=100K compile_ok --source src/k29.cl
expect_eq "the newest kernel stays" user "$TIER"
run verify
expect_rc 0

# An age limit: what was not used for longer goes (uses are known by the
# minute, each counted from its minute's start, so 2 s past is past 1 s).
run prune --max-age 1w --json
expect_eq "prune --max-age 1w: nothing that old" 0 "$(json_get "$OUT" expired)"
sleep 2  # the age limit is about time passing, not a wait for another process
run prune --max-age 1s --json
expect_rc 0
expect_eq "prune --max-age 1s: every entry is older" "$(json_get "$OUT" entries_before)" "$(json_get "$OUT" expired)"
expect_eq "prune --max-age 1s: none is left" 0 "$(json_get "$OUT" entries_after)"

# With the cache off there is nothing to prune: a clear failure.
KCACHE_DISABLE_CACHE=1 run prune
expect_rc 1
expect_contains "prune with the cache off" "disabled" "$ERR"
pass
