#!/usr/bin/env bash
# An unknown backend is a usage error: exit 2, the message lists the known
# backends, nothing is cached.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
run info --json
backends="$(json_py "$OUT" '" ".join(d["backends"])')"
[[ "$backends" == *command* ]] || fail "info --json backends: expected 'command' among them, seen '$backends'"

run compile --backend no-such-backend --source src/add.cl --target gfx906_60 --json
expect_rc 2
for b in $backends; do
  expect_contains "stderr lists the known backend '$b'" "$b" "$ERR"
done
expect_contains "stderr names the bad backend" no-such-backend "$ERR"
[[ "$ERR" == kcache:* ]] || fail "stderr: expected to start with 'kcache: ', seen '$ERR'"
expect_eq "stdout" "" "$OUT"
expect_eq "files in the cache dir" 0 "$(file_count "$T/cache")"
run list
expect_contains "kcache list" "0 entries" "$OUT"
pass
