#!/usr/bin/env bash
# A compiler (command backend) that leaves at {out} a FIFO, a link to
# /dev/zero, a folder or an empty file: the compile fails at once (exit 1,
# a "kcache: " message naming what was found), within --timeout, and no
# binary is cached. Once a FIFO hung kcache past --timeout, a link to
# /dev/zero made it read until memory ran out, and an empty file was
# cached as a binary.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bounded.sh"
fresh_env
require_enabled_build

# fails WHAT SCRIPT NEEDLE: a compiler running `sh -c SCRIPT {in} {out}`
# ($0 the source, $1 {out}) exits 0, and kcache refuses what it left.
fails() {
  local what=$1 script=$2 needle=$3
  run_bounded 20 compile --json --backend command --command "sh -c '$script' {in} {out}" \
    --compiler-id "test-$what" --target gfx906_60 --timeout 2 --source src/add.cl \
    --output "out/$what.bin"
  expect_rc 1
  expect_contains "$what: stderr" "kcache: compile failed: sh exited 0 but $needle" "$ERR"
  expect_eq "$what: stdout" "" "$OUT"
  ((ELAPSED_MS < 5000)) || fail "$what: took ${ELAPSED_MS} ms with --timeout 2"
  [[ ! -e "out/$what.bin" ]] || fail "$what: --output was written"
  expect_eq "$what: binaries cached" 0 "$(binary_count)"
}

fails fifo 'mkfifo "$1"' "left a FIFO at {out}, not a regular file"
fails zero-link 'ln -s /dev/zero "$1"' "left a symbolic link (to /dev/zero) at {out}, not a regular file"
fails folder 'mkdir "$1"' "left a folder at {out}, not a regular file"
fails empty ': >"$1"' "wrote an empty output file ({out})"
fails none 'true' "wrote no output file ({out})"

# A compiler that writes a binary still works.
compile_ok --source src/add.cl --timeout 2
expect_eq "a good compiler: tier" compiled "$TIER"
expect_eq "binaries cached" 1 "$(binary_count)"
pass
