#!/usr/bin/env bash
# A --source that does not exist: exit 1, the message names the file, nothing
# is cached and the compiler is not run.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
marker="$T/compiler-ran"

run compile --backend command --command "sh -c 'touch $marker; cp \"\$0\" \"\$1\"' {in} {out}" \
  --compiler-id test-touch --target gfx906_60 --json --source "$T/src/no-such-kernel.cl"
expect_rc 1
expect_contains "stderr" "no-such-kernel.cl" "$ERR"
[[ "$ERR" == kcache:* ]] || fail "stderr: expected to start with 'kcache: ', seen '$ERR'"
expect_eq "stdout" "" "$OUT"
[[ ! -e "$marker" ]] || fail "the compiler ran for a missing source"
expect_eq "files in the cache dir" 0 "$(file_count "$T/cache")"

compile --source "$T/src/no-such-kernel.cl" --output out/x.bin
expect_rc 1
[[ ! -e out/x.bin ]] || fail "--output was written for a missing source"
# A folder is not a source either (a failure; nothing cached).
compile --source "$T/src"
((RC != 0)) || fail "compile --source <a folder>: expected a failure, seen exit 0"
expect_eq "files in the cache dir" 0 "$(file_count "$T/cache")"
run list
expect_rc 0
expect_contains "kcache list" "0 entries" "$OUT"
pass
