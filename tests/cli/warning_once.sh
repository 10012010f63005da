#!/usr/bin/env bash
# With no database for the target in the system folder, one `kcache compile`
# prints the missing-database warning exactly once; KCACHE_LOG_LEVEL=error
# (or quiet) silences it.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
warning='kcache: Warning [SystemDb] Missing system database file: gfx906_60.kdb Performance may degrade'

compile_ok --source src/add.cl
expect_eq "tier" compiled "$TIER"
expect_eq "times the warning is on stderr (miss)" 1 "$(count_lines "$ERR" "$warning")"
expect_eq "other SystemDb lines on stderr (miss)" 1 "$(count_prefix "$ERR" "kcache: Warning [SystemDb]")"
expect_not_contains "stdout" "Missing system database" "$OUT"

compile_ok --source src/add.cl
expect_eq "tier" user "$TIER"
expect_eq "times the warning is on stderr (user hit)" 1 "$(count_lines "$ERR" "$warning")"
expect_eq "other SystemDb lines on stderr (user hit)" 1 "$(count_prefix "$ERR" "kcache: Warning [SystemDb]")"

# The non-JSON form too.
run compile "${CP_ARGS[@]}" --target gfx906_60 --source src/mul.cl
expect_rc 0
expect_eq "times the warning is on stderr (plain output)" 1 "$(count_lines "$ERR" "$warning")"

# The name is the target's database: sm_90_132 -> sm_90_132.kdb.
compile_ok --source src/add.cl --target sm_90_132
expect_eq "times the sm_90_132 warning is on stderr" 1 \
  "$(count_lines "$ERR" 'kcache: Warning [SystemDb] Missing system database file: sm_90_132.kdb Performance may degrade')"

units=64
for level in error ERROR quiet; do
  export KCACHE_LOG_LEVEL="$level"
  units=$((units + 1)) # a new database each time: a miss in system and user
  compile_ok --source src/add.cl
  expect_eq "KCACHE_LOG_LEVEL=$level: stderr" "" "$ERR"
  compile_ok --source src/add.cl --target "gfx900_$units"
  expect_eq "KCACHE_LOG_LEVEL=$level: tier of a new target" compiled "$TIER"
  expect_eq "KCACHE_LOG_LEVEL=$level: stderr of a new target" "" "$ERR"
done
export KCACHE_LOG_LEVEL=warning
compile_ok --source src/add.cl
expect_eq "KCACHE_LOG_LEVEL=warning: times the warning is on stderr" 1 "$(count_lines "$ERR" "$warning")"
pass
