#!/usr/bin/env bash
# compile --output and export -o write only regular files: a symbolic
# link, a FIFO or a folder in the way is refused (exit 1, a "kcache: "
# message), left as it was, and nothing is written through it. (As root,
# `export -o /dev/full` once replaced /dev/full with a regular file; a FIFO
# made here stands in for a device node.) A regular file is replaced whole,
# and a link planted at a temporary name cannot redirect the write.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bounded.sh"
fresh_env
require_enabled_build

printf 'precious\n' >"$T/victim"
ln -s "$T/victim" out/link.bin
mkfifo out/fifo.bin
mkdir out/folder.bin
before="$(snapshot "$T/out"; snapshot "$T/victim")"

# refused WHAT NEEDLE ARGS...: exit 1 within 10 s, nothing under out/ or
# the victim changed.
refused() {
  local what=$1 needle=$2
  shift 2
  run_bounded 10 "$@"
  expect_rc 1
  expect_contains "$what: stderr" "$needle" "$ERR"
  [[ "$ERR" == kcache:* ]] || fail "$what: stderr must start with 'kcache: ', seen '$ERR'"
  ((ELAPSED_MS < 5000)) || fail "$what took ${ELAPSED_MS} ms to be refused"
  expect_eq "$what: out/ and the victim afterwards" "$before" "$(snapshot "$T/out"; snapshot "$T/victim")"
}

refused "compile --output <a link>" \
  "kcache: --output out/link.bin is a symbolic link; kcache does not write through links" \
  compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl --output out/link.bin
# Refused before compiling: nothing was cached for it.
expect_eq "entries after a refused --output" 0 "$(file_count "$T/cache")"
refused "compile --output <a FIFO>" "kcache: --output out/fifo.bin is a FIFO; kcache writes only regular files" \
  compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl --output out/fifo.bin
refused "compile --output <a folder>" "kcache: --output out/folder.bin is a folder" \
  compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl --output out/folder.bin

# A regular file is replaced (not written in place: a hard link to the old
# one keeps the old bytes), through a fresh temporary name; the name the
# tool once used, <out>.kcache-tmp, can hold a link to anything.
printf 'old\n' >out/real.bin
ln out/real.bin "$T/hardlink"
ln -s "$T/victim" out/real.bin.kcache-tmp
compile_ok --source src/add.cl --output out/real.bin
cmp -s out/real.bin src/add.cl || fail "--output out/real.bin does not hold the binary"
expect_eq "the old file's other name" "old" "$(cat "$T/hardlink")"
expect_eq "the victim behind a link at the old temporary name" "precious" "$(cat "$T/victim")"
leftovers="$(find "$T/out" -name '*kcache-tmp*' ! -name 'real.bin.kcache-tmp')"
expect_eq "temporary files left in out/" "" "$leftovers"
rm out/real.bin.kcache-tmp
before="$(snapshot "$T/out"; snapshot "$T/victim")"

# export -o: the same rules.
refused "export -o <a link>" \
  "kcache: export of gfx906_60: --output out/link.bin is a symbolic link" \
  export -o out/link.bin
refused "export -o <a FIFO>" "kcache: export of gfx906_60: --output out/fifo.bin is a FIFO" \
  export -o out/fifo.bin
# Into a folder: a link named <db>.kdb there is refused too.
mkdir "$T/pkg"
ln -s "$T/victim" "$T/pkg/gfx906_60.kdb"
refused "export -o <a folder holding a link named gfx906_60.kdb>" \
  "--output $T/pkg/gfx906_60.kdb is a symbolic link" export -o "$T/pkg"
rm "$T/pkg/gfx906_60.kdb"
run export -o "$T/pkg"
expect_rc 0
[[ -f "$T/pkg/gfx906_60.kdb" && ! -L "$T/pkg/gfx906_60.kdb" ]] || fail "export -o $T/pkg wrote no gfx906_60.kdb"
run export -o out/real.kdb
expect_rc 0
[[ -f out/real.kdb && ! -L out/real.kdb ]] || fail "export -o out/real.kdb wrote no regular file"
expect_eq "the victim" "precious" "$(cat "$T/victim")"
pass
