#!/usr/bin/env bash
# A user cache folder another user could write (ssh's StrictModes, as for
# packages) is not used: writable by others, reached through a link to
# such a folder, or (as root) owned by another user. A compile then says
# so once, naming the folder and why, compiles, and neither reads nor
# appends to the folder; `kcache verify` names it and exits 1, `list`
# fails. KCACHE_SHARED_CACHE=1 declares it shared and it is used; put
# right, it is used again.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"

real="$T/real"
export KCACHE_CUSTOM_CACHE_DIR="$real"
compile_ok --source src/add.cl
expect_eq "first compile: tier" compiled "$TIER"
key="$KEY"
log="$real/$version/gfx906_60.ukdb"
[[ -f "$log" ]] || fail "expected $log"
compile_ok --source src/add.cl
expect_eq "own folder: tier" user "$TIER"

refused() { # NAME FOLDER REASON
  local before
  before="$(stat -c %s "$log")"
  compile_ok --source src/add.cl
  expect_eq "$1: tier" compiled "$TIER"
  expect_eq "$1: warnings" 1 "$(warning_count "$ERR")"
  expect_contains "$1: the warning names the folder" "The user cache $2 is not used" \
    "$(warnings "$ERR")"
  expect_contains "$1: the warning says why" "$3" "$(warnings "$ERR")"
  expect_contains "$1: the warning says what to do" "KCACHE_SHARED_CACHE=1" "$(warnings "$ERR")"
  expect_eq "$1: nothing appended to the log" "$before" "$(stat -c %s "$log")"
  # A different kernel: nothing is stored either.
  printf '// %s\n' "$1" >"src/refused_$1.cl"
  compile_ok --source "src/refused_$1.cl"
  expect_eq "$1: another kernel: tier" compiled "$TIER"
  expect_eq "$1: still nothing appended" "$before" "$(stat -c %s "$log")"
  run verify
  expect_rc 1
  expect_contains "$1: verify names the folder" "$2" "$OUT"
  expect_contains "$1: verify says why" "$3" "$OUT"
  run list
  expect_rc 1
  expect_contains "$1: list says why" "is not used" "$ERR"
}

chmod 0777 "$real/$version"
refused open-folder "$real/$version" "folder $real/$version is writable by others (mode 0777)"
chmod 1777 "$real/$version"
refused sticky-folder "$real/$version" "folder $real/$version is writable by others (mode 1777)"

# Declared shared, the same folder is used.
KCACHE_SHARED_CACHE=1 compile_ok --source src/add.cl
expect_eq "shared: tier" user "$TIER"
expect_eq "shared: no warning" 0 "$(warning_count "$ERR")"

# Through a link: judged where it leads.
chmod 0777 "$real/$version"
mkdir -p "$T/mine"
ln -s "$real/$version" "$T/mine/$version"
export KCACHE_CUSTOM_CACHE_DIR="$T/mine"
refused link "$T/mine/$version" "folder $real/$version is writable by others (mode 0777)"

# Put right, the same folder and its entries are used again.
chmod 0700 "$real/$version"
compile_ok --source src/add.cl
expect_eq "closed again, through the link: tier" user "$TIER"
expect_eq "closed again: key" "$key" "$KEY"
export KCACHE_CUSTOM_CACHE_DIR="$real"
run verify
expect_rc 0

# A folder above that others can write without the sticky bit: the cache
# folder could be swapped for another, so it is refused before it is made.
mkdir -p "$T/open"
chmod 0777 "$T/open"
export KCACHE_CUSTOM_CACHE_DIR="$T/open/cache"
compile_ok --source src/add.cl
expect_eq "open folder above: tier" compiled "$TIER"
expect_contains "open folder above: why" "folder $T/open is writable by others without the sticky bit" \
  "$(warnings "$ERR")"

# Owned by another user (only root can make one here).
if [[ "$(id -u)" == 0 ]]; then
  chmod 0755 "$T/open"
  mkdir -p "$T/open/theirs/$version"
  chmod 0700 "$T/open/theirs/$version"
  chown 12345 "$T/open/theirs/$version"
  export KCACHE_CUSTOM_CACHE_DIR="$T/open/theirs"
  compile_ok --source src/add.cl
  expect_eq "another user's folder: tier" compiled "$TIER"
  expect_contains "another user's folder: why" "is owned by another user (uid 12345)" \
    "$(warnings "$ERR")"
fi
pass
