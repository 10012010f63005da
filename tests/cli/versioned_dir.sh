#!/usr/bin/env bash
# The default user dir: $HOME/.cache/kcache/<version>/, or
# $XDG_CACHE_HOME/kcache/<version>/ when XDG_CACHE_HOME is set (absolute);
# `kcache info --json` shows each setting's value and origin.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
version="$(kcache_version)"
unset KCACHE_CUSTOM_CACHE_DIR XDG_CACHE_HOME

run info --json
expect_rc 0
info="$OUT"
origin="$(setting "$info" cache_dir origin)"
value="$(setting "$info" cache_dir value)"
if [[ "$origin" == build && "$value" != "~/.cache/kcache" && "$value" != "$HOME/.cache/kcache" ]]; then
  skip "this build sets KCACHE_CACHE_DIR='$value', not the default ~/.cache/kcache"
fi
[[ "$origin" == build || "$origin" == default ]] ||
  fail "cache_dir origin without KCACHE_CUSTOM_CACHE_DIR/XDG_CACHE_HOME: expected 'build' or 'default', seen '$origin'"
[[ "$value" == "~/.cache/kcache" || "$value" == "$HOME/.cache/kcache" ]] ||
  fail "cache_dir value: expected '~/.cache/kcache' or '$HOME/.cache/kcache', seen '$value'"
expect_eq "info user_dir from HOME" "$HOME/.cache/kcache/$version" "$(json_get "$info" user_dir)"
expect_eq "info disable_cache origin" default "$(setting "$info" disable_cache origin)"
expect_eq "info disable_cache value" false "$(setting "$info" disable_cache value)"
expect_eq "info system_db_path origin" "env KCACHE_SYSTEM_DB_PATH" "$(setting "$info" system_db_path origin)"
expect_eq "info system_db_path value" "$T/sys" "$(setting "$info" system_db_path value)"
expect_eq "info log_level value" warning "$(setting "$info" log_level value)"
expect_eq "info log_level origin" default "$(setting "$info" log_level origin)"

compile_ok --source src/add.cl
expect_eq "tier" compiled "$TIER"
key="$KEY"
has_entry "$HOME/.cache/kcache/$version" gfx906_60 "$key" ||
  fail "expected $key in $HOME/.cache/kcache/$version/gfx906_60.ukdb; HOME holds: $(find "$HOME")"
others="$(find "$HOME/.cache/kcache" -mindepth 1 -maxdepth 1 ! -name "$version")"
[[ -z "$others" ]] || fail "expected only the version folder in $HOME/.cache/kcache, also seen: $others"
compile_ok --source src/add.cl
expect_eq "second compile from HOME: tier" user "$TIER"
home_before="$(snapshot "$HOME")"

# XDG_CACHE_HOME (absolute) moves the default.
export XDG_CACHE_HOME="$T/xdg"
run info --json
expect_rc 0
expect_eq "info user_dir with XDG_CACHE_HOME" "$T/xdg/kcache/$version" "$(json_get "$OUT" user_dir)"
expect_eq "cache_dir value with XDG_CACHE_HOME" "$T/xdg/kcache" "$(setting "$OUT" cache_dir value)"
expect_eq "cache_dir origin with XDG_CACHE_HOME" "env XDG_CACHE_HOME" "$(setting "$OUT" cache_dir origin)"
compile_ok --source src/add.cl
expect_eq "tier with XDG_CACHE_HOME (a new, empty dir)" compiled "$TIER"
has_entry "$T/xdg/kcache/$version" gfx906_60 "$key" ||
  fail "expected the entry under $T/xdg/kcache/$version; seen: $(find "$T/xdg" 2>&1)"
compile_ok --source src/add.cl
expect_eq "second compile with XDG_CACHE_HOME: tier" user "$TIER"
expect_eq "HOME while XDG_CACHE_HOME is set (nothing written there)" "$home_before" "$(snapshot "$HOME")"

# KCACHE_CUSTOM_CACHE_DIR wins over XDG_CACHE_HOME.
export KCACHE_CUSTOM_CACHE_DIR="$T/custom"
run info --json
expect_eq "info user_dir with both set" "$T/custom/$version" "$(json_get "$OUT" user_dir)"
expect_eq "cache_dir origin with both set" "env KCACHE_CUSTOM_CACHE_DIR" "$(setting "$OUT" cache_dir origin)"
unset KCACHE_CUSTOM_CACHE_DIR

# A relative XDG_CACHE_HOME is invalid (XDG spec) and ignored: back to HOME.
export XDG_CACHE_HOME="relative/xdg"
run info --json
expect_eq "info user_dir with a relative XDG_CACHE_HOME" "$HOME/.cache/kcache/$version" "$(json_get "$OUT" user_dir)"
compile_ok --source src/add.cl
expect_eq "tier with a relative XDG_CACHE_HOME" user "$TIER"
[[ ! -e "$T/relative" ]] || fail "a relative XDG_CACHE_HOME was used: $T/relative exists"

# An empty XDG_CACHE_HOME is unset.
export XDG_CACHE_HOME=""
run info --json
expect_eq "info user_dir with an empty XDG_CACHE_HOME" "$HOME/.cache/kcache/$version" "$(json_get "$OUT" user_dir)"
pass
