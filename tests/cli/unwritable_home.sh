#!/usr/bin/env bash
# HOME below a regular file (mkdir fails, even as root) and no
# KCACHE_CUSTOM_CACHE_DIR: the default folder cannot be created, so kcache
# keeps kernels in the private fallback folder ${TMPDIR:-/tmp}/kcache-<uid>
# (created 0700), with exactly one warning; `kcache info` says where the
# setting came from. A fallback folder someone else made first (mode 0777)
# is refused with one warning, and every compile still succeeds.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
: >"$T/file"
unset KCACHE_CUSTOM_CACHE_DIR XDG_CACHE_HOME
export HOME="$T/file/home"
version="$(kcache_version)"
fallback="$TMPDIR/kcache-$(id -u)"

for i in 1 2; do
  compile --source src/add.cl --output "out/$i.bin"
  expect_rc 0
  if ((i == 1)); then expect_eq "compile $i: tier" compiled "$TIER"; else expect_eq "compile $i: tier" user "$TIER"; fi
  expect_eq "compile $i: bytes" "$(stat -c %s src/add.cl)" "$BYTES"
  [[ "$KEY" =~ ^[0-9a-f]{32}$ ]] || fail "compile $i: expected a key, seen $OUT"
  cmp -s src/add.cl "out/$i.bin" || fail "compile $i: --output is not the compiled binary"
  expect_eq "compile $i: warnings on stderr" 1 "$(warning_count "$ERR")"
  expect_contains "compile $i: the warning" "kcache: Warning [Config] The cache folder $T/file/home/.cache/kcache/$version cannot be created" "$ERR"
  expect_contains "compile $i: the warning names the fallback" "private fallback folder $fallback" "$ERR"
  bad="$(grep -v '^kcache: ' <<<"$ERR")"
  [[ -z "$bad" ]] || fail "compile $i: every stderr line should start with 'kcache: ', these do not: $bad"
done
has_entry "$fallback/$version" gfx906_60 "$KEY" || fail "expected the entry in $fallback; seen: $(find "$TMPDIR")"
expect_eq "mode of $fallback" 700 "$(stat -c %a "$fallback")"

run info --json
expect_rc 0
expect_eq "info: cache_dir" "$fallback" "$(setting "$OUT" cache_dir value)"
expect_eq "info: cache_dir origin" "fallback (default not writable)" "$(setting "$OUT" cache_dir origin)"
expect_eq "info: user_dir" "$fallback/$version" "$(json_get "$OUT" user_dir)"

# Someone else's folder in its place: refused, never used.
rm -rf "$fallback"
mkdir -m 0777 "$fallback"
chmod 0777 "$fallback"
for i in 3 4; do
  compile --source src/add.cl --output "out/$i.bin"
  expect_rc 0
  expect_eq "compile $i (refused fallback): tier" compiled "$TIER"
  cmp -s src/add.cl "out/$i.bin" || fail "compile $i: --output is not the compiled binary"
  expect_eq "compile $i: warnings on stderr" 1 "$(warning_count "$ERR")"
  expect_contains "compile $i: the warning" "the fallback folder is refused ($fallback has mode 0777, not 0700)" "$ERR"
done
[[ -z "$(ls -A "$fallback")" ]] || fail "kcache wrote into a refused fallback folder: $(find "$fallback")"

# The plain output too.
run compile "${CP_ARGS[@]}" --target gfx906_60 --source src/add.cl
expect_rc 0
[[ "$OUT" == compiled* && "$OUT" == *gfx906_60* ]] || fail "plain compile: expected a line 'compiled gfx906_60 ...', seen '$OUT'"
expect_eq "plain compile: warnings" 1 "$(warning_count "$ERR")"

[[ -f "$T/file" && ! -s "$T/file" ]] || fail "$T/file was changed"
pass
