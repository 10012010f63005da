#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2154  # RC, OUT, ERR are read by lib.sh; rc is set in the trap
# A compile killed by kill -9 cannot remove its scratch folder
# ($TMPDIR/kcache-compile-XXXXXX); the next kcache run does. Ownership is a
# lock the creator holds, not a pid: a folder whose owner still runs is
# kept, a link named like a scratch folder is not followed, and a folder of
# an older kcache (no lock) goes once it is an hour old.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# Says it started (started.<source name> holds its pid), then waits for
# $T/go before it copies.
cat >"$T/waiting_cc.sh" <<'SCRIPT'
#!/bin/sh
dir=$(dirname "$0")
echo $$ >"$dir/started.$(basename "$1")"
while [ ! -e "$dir/go" ]; do sleep 0.05; done
cp "$1" "$2"
SCRIPT
WAITING_CC=(--backend command --command "sh $T/waiting_cc.sh {in} {out}" --compiler-id waiting-cc
  --target gfx906_60 --timeout 60)

background=()
stop_background() {
  touch "$T/go"
  local pid
  for pid in "${background[@]}"; do kill -9 "$pid" 2>/dev/null; done
}
trap 'rc=$?; stop_background; (exit $rc); cleanup' EXIT

# wait_for FILE: until FILE exists (at most 20 s).
wait_for() {
  for _ in $(seq 400); do
    [[ -e "$1" ]] && return 0
    sleep 0.05
  done
  fail "$1 did not appear within 20 s"
}

scratch() { find "$T/tmp" -mindepth 1 -maxdepth 1 -name "kcache-compile-*" | LC_ALL=C sort; }

# 1. A compile killed in the middle leaves its folder, with its lock file.
"$KCACHE" compile "${WAITING_CC[@]}" --source src/add.cl >/dev/null 2>&1 &
killed=$!
background+=("$killed")
wait_for "$T/started.add.cl"
left="$(scratch)"
[[ -n "$left" && "$(wc -l <<<"$left")" == 1 ]] || fail "expected one scratch folder during the compile, seen '$left'"
[[ -f "$left/.kcache-owner.lock" ]] || fail "the scratch folder $left has no owner lock"
kill -9 "$killed"
wait "$killed" 2>/dev/null
kill -9 "$(cat "$T/started.add.cl")" 2>/dev/null  # the orphaned compiler
[[ -d "$left" ]] || fail "the killed compile's folder is already gone (expected it left behind)"

# 2. The next run reclaims it, and its own folder stays while it runs.
"$KCACHE" compile "${WAITING_CC[@]}" --source src/mul.cl >"$T/live.out" 2>"$T/live.err" &
live=$!
background+=("$live")
wait_for "$T/started.mul.cl"
[[ ! -e "$left" ]] || fail "the next run did not reclaim the killed compile's folder $left"
live_folder="$(scratch)"
[[ -n "$live_folder" && "$(wc -l <<<"$live_folder")" == 1 ]] || fail "expected the live compile's folder, seen '$live_folder'"

# 3. What another run must leave alone, and an older kcache's leftovers.
mkdir -p "$T/victim"
printf 'precious\n' >"$T/victim/precious"
: >"$T/victim/.kcache-owner.lock"  # looks abandoned: nobody holds it
ln -s "$T/victim" "$T/tmp/kcache-compile-Link01"
mkdir -p "$T/tmp/kcache-compile-Old001/sub" "$T/tmp/kcache-compile-New001"
echo x >"$T/tmp/kcache-compile-Old001/sub/output.bin"
touch -d '2 hours ago' "$T/tmp/kcache-compile-Old001"
mkdir "$T/tmp/kcache-test-Old002"
touch -d '2 hours ago' "$T/tmp/kcache-test-Old002"

compile_ok --source src/add.cl
expect_eq "tier of the compile that reclaims" compiled "$TIER"
[[ -d "$live_folder" ]] || fail "a run reclaimed the folder of a compile still running ($live_folder)"
[[ -L "$T/tmp/kcache-compile-Link01" ]] || fail "a link named like a scratch folder was removed"
expect_eq "the file behind the link" "precious" "$(cat "$T/victim/precious")"
[[ ! -e "$T/tmp/kcache-compile-Old001" ]] || fail "an older kcache's folder, 2 hours old, was not reclaimed"
[[ -d "$T/tmp/kcache-compile-New001" ]] || fail "an older kcache's fresh folder was reclaimed (it may be in use)"
[[ -d "$T/tmp/kcache-test-Old002" ]] || fail "a folder of a prefix kcache never used was removed"

# 4. The live compile finishes normally and removes its own folder.
touch "$T/go"
wait "$live"
RC=$?
LAST_CMD="kcache compile (the live one)" OUT="$(cat "$T/live.out")" ERR="$(cat "$T/live.err")"
expect_rc 0
[[ ! -e "$live_folder" ]] || fail "the finished compile left its folder $live_folder"
expect_eq "scratch folders at the end" "$T/tmp/kcache-compile-Link01
$T/tmp/kcache-compile-New001" "$(scratch)"
pass
