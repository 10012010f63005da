#!/usr/bin/env bash
# KCACHE_CUSTOM_CACHE_DIR replaces the user cache dir; the version folder is
# still appended: files land in <dir>/<version>/.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
[[ -n "$version" && "$version" != */* ]] || fail "version: expected a folder name, seen '$version'"

dir="$T/custom/nested/dir" # does not exist yet: kcache creates it
export KCACHE_CUSTOM_CACHE_DIR="$dir"
run info --json
expect_rc 0
expect_eq "info user_dir" "$dir/$version" "$(json_get "$OUT" user_dir)"
expect_eq "info cache_dir value" "$dir" "$(setting "$OUT" cache_dir value)"
expect_eq "info cache_dir origin" "env KCACHE_CUSTOM_CACHE_DIR" "$(setting "$OUT" cache_dir origin)"
[[ ! -e "$T/custom" ]] || fail "kcache info must not create the cache dir, but $T/custom exists"

compile_ok --source src/add.cl
expect_eq "tier" compiled "$TIER"
key="$KEY"
has_entry "$dir/$version" gfx906_60 "$key" ||
  fail "expected $key in $dir/$version/gfx906_60.ukdb; under $T/custom: $(find "$T/custom")"
outside="$(find "$dir" -mindepth 1 -maxdepth 1 ! -name "$version")"
[[ -z "$outside" ]] || fail "expected only the version folder in $dir, also seen: $outside"
[[ -z "$(ls -A "$T/home")" ]] || fail "expected nothing in HOME, seen: $(find "$T/home")"
[[ ! -e "$T/xdg" ]] || fail "expected nothing in XDG_CACHE_HOME, seen: $(find "$T/xdg")"
compile_ok --source src/add.cl
expect_eq "second compile: tier" user "$TIER"

# A trailing slash names the same folder.
export KCACHE_CUSTOM_CACHE_DIR="$dir/"
run info --json
expect_eq "info user_dir with a trailing slash" "$dir/$version" "$(json_get "$OUT" user_dir)"
compile_ok --source src/add.cl
expect_eq "tier with a trailing slash" user "$TIER"

# Another custom dir is another, empty cache.
export KCACHE_CUSTOM_CACHE_DIR="$T/other"
compile_ok --source src/add.cl
expect_eq "tier in another custom dir" compiled "$TIER"
has_entry "$T/other/$version" gfx906_60 "$key" ||
  fail "expected the entry under $T/other/$version; seen: $(find "$T/other")"
pass
