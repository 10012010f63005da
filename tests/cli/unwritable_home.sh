#!/usr/bin/env bash
# HOME below a regular file (mkdir fails, even as root) and no
# KCACHE_CUSTOM_CACHE_DIR: compile still prints the binary's info and exits
# 0, with exactly one `kcache: Warning [UserDb]` line.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
: >"$T/file"
unset KCACHE_CUSTOM_CACHE_DIR XDG_CACHE_HOME
export HOME="$T/file/home"

for i in 1 2; do
  compile --source src/add.cl --output "out/$i.bin"
  expect_rc 0
  expect_eq "compile $i: tier" compiled "$TIER"
  expect_eq "compile $i: bytes" "$(stat -c %s src/add.cl)" "$BYTES"
  [[ "$KEY" =~ ^[0-9a-f]{64}$ ]] || fail "compile $i: expected a key, seen $OUT"
  cmp -s src/add.cl "out/$i.bin" || fail "compile $i: --output is not the compiled binary"
  expect_eq "compile $i: lines starting 'kcache: Warning [UserDb]' on stderr" 1 "$(count_prefix "$ERR" "kcache: Warning [UserDb]")"
  bad="$(grep -v '^kcache: ' <<<"$ERR")"
  [[ -z "$bad" ]] || fail "compile $i: every stderr line should start with 'kcache: ', these do not: $bad"
done

# The plain output too.
run compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl
expect_rc 0
[[ "$OUT" == compiled* && "$OUT" == *gfx906_60* ]] || fail "plain compile: expected a line 'compiled gfx906_60 ...', seen '$OUT'"
expect_eq "plain compile: UserDb warnings" 1 "$(count_prefix "$ERR" "kcache: Warning [UserDb]")"

[[ -f "$T/file" && ! -s "$T/file" ]] || fail "$T/file was changed"
pass
