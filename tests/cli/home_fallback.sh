#!/usr/bin/env bash
# A user with no home at all (HOME unset, no passwd entry): kernels are
# kept in the private fallback folder ${TMPDIR:-/tmp}/kcache-<uid>, created
# 0700 and owned by that user, with one warning, and `kcache info` says
# "fallback (HOME is not set)". A fallback folder made first by someone
# else (another owner, a symbolic link, mode 0777) is refused with one
# warning and never read or written; compiles still succeed.
# Needs root (to run kcache as a uid without a passwd entry) and setpriv.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
[[ "$(id -u)" == 0 ]] || skip "needs root, to run kcache as a user without a passwd entry"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
uid=""
for candidate in 4242 4343 54321 60123; do
  if ! getent passwd "$candidate" >/dev/null; then uid="$candidate"; break; fi
done
[[ -n "$uid" ]] || skip "no free uid without a passwd entry"
version="$(kcache_version)"

# The user must reach the tool, the sources and the output folder; TMPDIR
# is sticky and world-writable, like /tmp.
chmod 0755 "$T" "$T/src"
chmod 0644 "$T"/src/*
chmod 0777 "$T/out"
chmod 1777 "$T/tmp"
real_kcache="$KCACHE"
setpriv --reuid="$uid" --regid="$uid" --clear-groups test -x "$real_kcache" ||
  skip "uid $uid cannot run $real_kcache (a folder above it is private)"
cat >"$T/as-user" <<EOS
#!/bin/sh
exec setpriv --reuid=$uid --regid=$uid --clear-groups env -u HOME -u XDG_CACHE_HOME -u KCACHE_CUSTOM_CACHE_DIR "$real_kcache" "\$@"
EOS
chmod 0755 "$T/as-user"
KCACHE="$T/as-user"
fallback="$TMPDIR/kcache-$uid"

compile --source src/add.cl --output out/1.bin
expect_rc 0
expect_eq "first compile: tier" compiled "$TIER"
cmp -s src/add.cl out/1.bin || fail "--output is not the compiled binary"
expect_eq "first compile: warnings" 1 "$(warning_count "$ERR")"
expect_contains "the warning" "kcache: Warning [Config] HOME is not set and this user has no home directory; kernels are kept in the private fallback folder $fallback instead" "$ERR"
expect_eq "owner of $fallback" "$uid" "$(stat -c %u "$fallback")"
expect_eq "mode of $fallback" 700 "$(stat -c %a "$fallback")"
compile --source src/add.cl
expect_rc 0
expect_eq "second compile: tier" user "$TIER"
run info --json
expect_rc 0
expect_eq "info: cache_dir" "$fallback" "$(setting "$OUT" cache_dir value)"
expect_eq "info: origin" "fallback (HOME is not set)" "$(setting "$OUT" cache_dir origin)"
expect_eq "info: user_dir" "$fallback/$version" "$(json_get "$OUT" user_dir)"

# Made first by someone else (root here), in each way.
refused() { # WHAT EXPECTED-REASON
  local i
  for i in 1 2; do
    compile --source src/add.cl --output "out/$1.$i.bin"
    expect_rc 0
    expect_eq "$1: compile $i: tier" compiled "$TIER"
    cmp -s src/add.cl "out/$1.$i.bin" || fail "$1: --output is not the compiled binary"
    expect_eq "$1: compile $i: warnings" 1 "$(warning_count "$ERR")"
    expect_contains "$1: the warning" "the fallback folder is refused ($2" "$ERR"
  done
  run info --json
  expect_eq "$1: info: user_dir" "" "$(json_get "$OUT" user_dir)"
}
rm -rf "$fallback"
mkdir -m 0700 "$fallback"
refused "owned by root" "$fallback belongs to uid 0, not to this user (uid $uid)"
[[ -z "$(ls -A "$fallback")" ]] || fail "kcache wrote into root's $fallback: $(find "$fallback")"

rm -rf "$fallback"
mkdir "$fallback" && chown "$uid:$uid" "$fallback" && chmod 0777 "$fallback"
refused "mode 0777" "$fallback has mode 0777, not 0700"
[[ -z "$(ls -A "$fallback")" ]] || fail "kcache wrote into the world-writable $fallback: $(find "$fallback")"

rm -rf "$fallback"
mkdir -p "$T/theirs" && chown "$uid:$uid" "$T/theirs" && chmod 0700 "$T/theirs"
ln -s "$T/theirs" "$fallback"
refused "a symbolic link" "$fallback is a symbolic link"
[[ -z "$(ls -A "$T/theirs")" ]] || fail "kcache followed the symbolic link: $(find "$T/theirs")"
pass
