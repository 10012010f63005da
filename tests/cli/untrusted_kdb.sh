#!/usr/bin/env bash
# A system package another user could have written is not served (ssh's
# StrictModes): in a folder others can write in (sticky or not), writable
# by others itself, a symbolic link, or (as root) owned by another user.
# Each compile then says so once, naming the file and why, and nothing
# about a missing database; `kcache verify` lists it and exits 1. Put
# right, the same package is served again.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

make_good_package
kdb="$T/sys/gfx906_60.kdb"

served() { # NAME
  rm -rf "$T/cache2"
  compile_ok --source src/add.cl --output "out/$1.bin"
  expect_eq "$1: tier" system "$TIER"
  cmp -s out/compiled.bin "out/$1.bin" || fail "$1: the system hit's binary differs"
  run verify
  expect_rc 0
}

refused() { # NAME REASON
  rm -rf "$T/cache2"
  compile_ok --source src/add.cl --output "out/$1.bin"
  expect_eq "$1: tier" compiled "$TIER"
  cmp -s out/compiled.bin "out/$1.bin" || fail "$1: --output is not the compiled binary"
  expect_eq "$1: warnings" 1 "$(warning_count "$ERR")"
  expect_contains "$1: the warning names the file" "$kdb is not used" "$(warnings "$ERR")"
  expect_contains "$1: the warning says why" "$2" "$(warnings "$ERR")"
  expect_not_contains "$1: no 'Missing'" "Missing system database file" "$ERR"
  run verify
  expect_rc 1
  expect_contains "$1: verify names the package" "problem:  $kdb" "$OUT"
  expect_contains "$1: verify says why" "$2" "$OUT"
}

cp "$good" "$kdb"
chmod 0644 "$kdb"
chmod 0755 "$T/sys"
served private

chmod 0777 "$T/sys"
refused open-folder "folder $T/sys is writable by others (mode 0777)"
chmod 1777 "$T/sys"
refused sticky-folder "folder $T/sys is writable by others (mode 1777)"
chmod 0755 "$T/sys"
served folder-closed

chmod 0666 "$kdb"
refused open-file "file $kdb is writable by others (mode 0666)"
chmod 0644 "$kdb"

# A folder above the package: writable by others only with the sticky bit.
mkdir -p "$T/up/sys"
mv "$kdb" "$T/up/sys/"
export KCACHE_SYSTEM_DB_PATH="$T/up/sys"
kdb="$T/up/sys/gfx906_60.kdb"
chmod 0777 "$T/up"
refused open-folder-above "without the sticky bit"
chmod 1777 "$T/up"
served sticky-folder-above
chmod 0755 "$T/up"

mv "$kdb" "$T/sys/gfx906_60.real"
ln -s "$T/sys/gfx906_60.real" "$kdb"
refused link "file $kdb is a symbolic link"
expect_contains "link: said as a link, not another user's" "it is a symbolic link, which is not followed" "$OUT"
rm "$kdb"
mv "$T/sys/gfx906_60.real" "$kdb"
served back

if [[ "$(id -u)" == 0 ]]; then
  chown 12345 "$kdb"
  refused other-owner "owned by another user (uid 12345)"
  chown 0 "$kdb"
  served owner-back
fi
