#!/usr/bin/env bash
# A compiler that hangs is stopped at --timeout, with what it started: exit
# 1, a "kcache: " message naming the program and the limit, nothing cached
# and nothing remembered, so the next attempt compiles.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# Hangs (with a child that hangs too) while $T/hang exists; else copies.
cat >"$T/slow_cc.sh" <<'SCRIPT'
#!/bin/sh
dir=$(dirname "$0")
if [ -e "$dir/hang" ]; then
  echo $$ >"$dir/pids"
  sleep 30 &
  echo $! >>"$dir/pids"
  echo "slow_cc: still thinking" >&2
  sleep 30
fi
cp "$1" "$2"
SCRIPT
SLOW_CC=(--backend command --command "sh $T/slow_cc.sh {in} {out}" --compiler-id slow-cc)

# Alive: running and not a zombie (an orphan killed with the group may stay
# one until whoever adopted it reaps it).
alive() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

touch "$T/hang"
start=$(date +%s%N)
compile_raw "${SLOW_CC[@]}" --source src/add.cl --timeout 0.5
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect_rc 1
expect_contains "stderr" "kcache: compile timed out: sh did not finish within 0.5 s; it was stopped (SIGKILL)" "$ERR"
expect_contains "stderr holds what the compiler printed" "slow_cc: still thinking" "$ERR"
expect_eq "stdout" "" "$OUT"
((elapsed_ms < 10000)) || fail "the hung compile took ${elapsed_ms} ms with --timeout 0.5"
for pid in $(cat "$T/pids"); do
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  alive "$pid" && fail "process $pid of the hung compiler is still running"
done

run list --json
expect_rc 0
expect_eq "entries (binaries and remembered failures) after a timeout" 0 "$(json_py "$OUT" 'len(d)')"

rm "$T/hang"
compile_raw "${SLOW_CC[@]}" --source src/add.cl --timeout 0.5
expect_rc 0
expect_eq "the next attempt compiles (a timeout is not remembered)" compiled "$TIER"

compile_raw "${SLOW_CC[@]}" --source src/add.cl --timeout 0
expect_rc 0  # 0: no limit

for bad in -1 abc nan; do
  compile_raw "${SLOW_CC[@]}" --source src/add.cl --timeout "$bad"
  expect_rc 2
  expect_contains "--timeout $bad" "wants a number of seconds" "$ERR"
done
pass "stopped after ${elapsed_ms} ms"
