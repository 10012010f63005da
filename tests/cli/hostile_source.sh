#!/usr/bin/env bash
# Sources and headers that are not regular files, or too large, are refused
# at once (exit 1, a "kcache: " message saying why), before the compiler
# runs: /dev/zero once made kcache read for ever and grow to gigabytes, and
# a FIFO with no writer hung it. A link to a regular file is still a source.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bounded.sh"
fresh_env
require_enabled_build
marker="$T/compiler-ran"
TOUCH_CC=(--backend command --command "sh -c 'touch $marker; cp \"\$0\" \"\$1\"' {in} {out}"
  --compiler-id test-touch --target gfx906_60)

# refused WHAT NEEDLE ARGS...: exit 1 within 10 s, one "kcache: " line
# holding NEEDLE, the compiler not run, nothing cached.
refused() {
  local what=$1 needle=$2
  shift 2
  rm -f "$marker"
  run_bounded 10 compile --json "${TOUCH_CC[@]}" "$@"
  expect_rc 1
  expect_contains "$what: stderr" "$needle" "$ERR"
  [[ "$ERR" == kcache:* ]] || fail "$what: stderr must start with 'kcache: ', seen '$ERR'"
  expect_eq "$what: stdout" "" "$OUT"
  ((ELAPSED_MS < 5000)) || fail "$what took ${ELAPSED_MS} ms to be refused"
  [[ ! -e "$marker" ]] || fail "$what: the compiler ran"
  expect_eq "$what: files in the cache dir" 0 "$(file_count "$T/cache")"
}

refused "--source /dev/zero" "cannot read --source /dev/zero: it is a character device" \
  --source /dev/zero
mkfifo "$T/fifo.cl"
refused "--source a FIFO with no writer" "it is a FIFO" --source "$T/fifo.cl"
# A writer that holds the FIFO open and never writes: still no wait.
sleep 30 >"$T/fifo.cl" &
writer=$!
refused "--source a FIFO with an idle writer" "it is a FIFO" --source "$T/fifo.cl"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
ln -s /dev/zero "$T/src/zero.cl"
refused "--source a link to /dev/zero" "it is a character device" --source "$T/src/zero.cl"
refused "--header NAME=/dev/zero" "cannot read header file /dev/zero: it is a character device" \
  --source src/add.cl --header zero.h=/dev/zero
refused "--header NAME=<a FIFO>" "it is a FIFO" --source src/add.cl --header f.h="$T/fifo.cl"

# 64 MiB is the limit for a source and for each header; a sparse file
# costs no disk.
truncate -s $((64 * 1024 * 1024 + 1)) "$T/src/huge.cl" || skip "truncate cannot make a sparse file here"
refused "--source of 64 MiB + 1" "larger than 64 MiB, the limit for a source or header file" \
  --source "$T/src/huge.cl"
refused "--header of 64 MiB + 1" "larger than 64 MiB" --source src/add.cl --header huge.h="$T/src/huge.cl"

# The bounds refuse nothing ordinary: a link to a regular source compiles.
ln -s add.cl "$T/src/link.cl"
compile_ok --source src/link.cl --output out/link.bin
expect_eq "a linked source: tier" compiled "$TIER"
cmp -s out/link.bin src/add.cl || fail "the binary compiled through a linked source differs"
pass
