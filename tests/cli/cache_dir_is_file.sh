#!/usr/bin/env bash
# KCACHE_CUSTOM_CACHE_DIR names a regular file (or /dev/zero, a FIFO):
# every compile succeeds with exactly one warning, naming the folder and
# the reason; the file is left as it was; info, list and verify still work.
# A folder the user chose is never replaced by a fallback.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
printf 'precious\n' >"$T/file"
export KCACHE_CUSTOM_CACHE_DIR="$T/file"

for i in 1 2; do
  compile --source src/add.cl --output "out/$i.bin"
  expect_rc 0
  expect_eq "compile $i: tier" compiled "$TIER"
  cmp -s src/add.cl "out/$i.bin" || fail "compile $i: --output is not the compiled binary"
  expect_eq "compile $i: warnings on stderr" 1 "$(warning_count "$ERR")"
  expect_contains "compile $i: the warning" "kcache: Warning [UserDb] Cannot write to the user cache $T/file/$version" "$ERR"
  expect_contains "compile $i: the reason" "$T/file exists and is not a directory" "$ERR"
done
expect_eq "the file" precious "$(cat "$T/file")"
[[ -z "$(ls -A "$TMPDIR")" ]] || fail "a chosen folder fell back to $TMPDIR: $(find "$TMPDIR")"

# Not a file: /dev/zero and a FIFO named as the cache folder. One warning
# each time, for the one cause: no folder can be made there (it was also
# called "a folder writable by others", a second warning).
mkfifo "$T/fifo"
chmod 666 "$T/fifo"
for dir in /dev/zero "$T/fifo"; do
  KCACHE_CUSTOM_CACHE_DIR="$dir" compile --source src/add.cl --output out/odd.bin
  expect_rc 0
  expect_eq "$dir: tier" compiled "$TIER"
  expect_eq "$dir: warnings on stderr" 1 "$(warning_count "$ERR")"
  expect_contains "$dir: the warning" "kcache: Warning [UserDb] Cannot write to the user cache $dir/$version" "$ERR"
  expect_contains "$dir: the reason" "$dir exists and is not a directory" "$ERR"
  expect_not_contains "$dir: not a folder others can write" "writable by others" "$ERR"
done
[[ -p "$T/fifo" ]] || fail "the FIFO was replaced"

run info --json
expect_rc 0
expect_eq "info: user_dir" "$T/file/$version" "$(json_get "$OUT" user_dir)"
run list --json
expect_rc 0
expect_eq "list: entries" 0 "$(json_py "$OUT" 'len(d)')"
run verify
expect_rc 0
pass
